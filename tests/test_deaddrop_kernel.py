"""The dead drop from the notebook side, in real kernels: prompts answered through files by another process."""

import subprocess, sys, threading, time
import pytest
from kernels import KernelSession

pytestmark = pytest.mark.slow   # every test here starts a real kernel

CLI = [sys.executable, '-m', 'boopiter_ext.faces.deaddrop_cli']

# A responder in its own process, using only the CLI: one thread per session answers the next prompt in pieces. It
# writes the rest of its answer once the notebook has shown the first piece (the test touches `go-SID` then).
RESPONDER = r'''
import json, pathlib, subprocess, sys, threading, time
CLI = [sys.executable, '-m', 'boopiter_ext.faces.deaddrop_cli']
def serve(sid):
    p = json.loads(subprocess.run(CLI + ['next', sid, '--wait', '--json', '--timeout', '60'], capture_output=True,
                                  text=True, check=True).stdout)
    reply = subprocess.Popen(CLI + ['reply', sid, p['id'], '--model', f'bot-{sid}'], stdin=subprocess.PIPE)
    go, deadline = pathlib.Path(sys.argv[1])/f'go-{sid}', time.monotonic() + 60
    for i, part in enumerate((f'Answer for {sid}: ', 'part one, ', 'part two, ', 'and the end.')):
        reply.stdin.write(part.encode()); reply.stdin.flush()
        while i == 0 and not go.exists() and time.monotonic() < deadline: time.sleep(0.01)
    reply.stdin.close(); reply.wait()
threads = [threading.Thread(target=serve, args=(sid,)) for sid in sys.argv[2:]]
for t in threads: t.start()
for t in threads: t.join()
'''


def shows(text, then):
    "An `on_message` callback: `then()` once the reply on screen includes `text`."
    done = []
    def check(kind, c):
        if not done and kind in ('display_data', 'update_display_data') and text in c['data'].get('text/plain', ''):
            done.append(then())
    return check


def cli(*args, **kw): return subprocess.run(CLI + list(args), capture_output=True, text=True, check=True, **kw)


def kernel(tmp_path, name):
    d = tmp_path/name
    d.mkdir()
    k = KernelSession(d)
    assert k.run('%load_ext boopiter_ext').status == 'ok'
    return k


def wait_for(cond, timeout=20):
    deadline = time.monotonic() + timeout
    while not (found := cond()):
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.02)
    return found


def test_a_responder_process_answers_two_notebooks_on_two_sessions(tmp_path):
    for sid in ('alpha', 'beta'): cli('new', sid)
    assert [l.split('\t')[0] for l in cli('list').stdout.splitlines()] == ['alpha', 'beta']
    responder = subprocess.Popen([sys.executable, '-c', RESPONDER, str(tmp_path), 'alpha', 'beta'])
    ka, kb = kernel(tmp_path, 'a'), kernel(tmp_path, 'b')
    try:
        listed = ka.run('%boop models').text
        assert 'deaddrop/alpha' in listed and 'deaddrop/beta' in listed
        ids = ka.send('%%prompt -m deaddrop/alpha\nQuestion for alpha'), kb.send('%%prompt -m deaddrop/beta\nQuestion for beta')
        got = {}
        def collect(k, msg_id, sid):   # both at once: each notebook sees its first piece while the other waits too
            got[sid] = k.collect(msg_id, timeout=90, on_message=shows(f'Answer for {sid}: ', (tmp_path/f'go-{sid}').touch))
        threads = [threading.Thread(target=collect, args=a) for a in ((ka, ids[0], 'alpha'), (kb, ids[1], 'beta'))]
        for t in threads: t.start()
        for t in threads: t.join(120)
        ra, rb = got['alpha'], got['beta']
    finally:
        ka.shutdown(); kb.shutdown()
    assert responder.wait(timeout=30) == 0
    for res, sid, other in ((ra, 'alpha', 'beta'), (rb, 'beta', 'alpha')):
        assert res.status == 'ok', res.text
        assert res.reply['data']['text/plain'] == f'Answer for {sid}: part one, part two, and the end.'
        assert other not in res.reply['data']['text/plain'] and res.count('update_display_data') >= 2
        md, html = res.reply['metadata']['boopiter'], res.reply['data']['text/markdown']
        assert md['model'] == f'deaddrop/{sid}' and md['answered_by'] == f'bot-{sid}' and md['session'] == sid
        assert f'Model: bot-{sid} (dead drop)' in html and f'Session: {sid}' in html and md['prompt_id'] in html
    prompt = (tmp_path/'dead_drop'/'alpha'/'inbox'/ra.reply['metadata']['boopiter']['prompt_id']/'prompt.md').read_text()
    assert 'Question for alpha' in prompt and '---DONE---' in prompt and 'beta' not in prompt


def test_the_legacy_route_end_to_end(tmp_path):
    k = kernel(tmp_path, 'nb')
    root = tmp_path/'dead_drop'
    def answer():
        [prompt] = wait_for(lambda: [p for p in (root/'prompts').glob('*') if not p.name.startswith('.')])
        (root/'responses').mkdir(exist_ok=True)
        with open(root/'responses'/prompt.name, 'a') as f:
            for part in ('Legacy ', 'answer.\n', '---MODEL: old-bot---\n', '---DONE---\n'):
                f.write(part); f.flush(); time.sleep(0.2)
    try:
        (root/'prompts').mkdir(parents=True)
        threading.Thread(target=answer, daemon=True).start()
        res = k.run('%%prompt -m deaddrop/claude\nAre you there?', timeout=30)
    finally: k.shutdown()
    assert res.reply['data']['text/plain'] == 'Legacy answer.'
    assert res.reply['metadata']['boopiter']['answered_by'] == 'old-bot'


def test_interrupt_keeps_the_partial_reply_and_marks_the_prompt_cancelled(tmp_path):
    cli('new', 'gamma')
    k = kernel(tmp_path, 'nb')
    inbox, outbox = tmp_path/'dead_drop'/'gamma'/'inbox', tmp_path/'dead_drop'/'gamma'/'outbox'
    def half_answer():
        [bundle] = wait_for(lambda: [p for p in inbox.iterdir() if not p.name.startswith('.')])
        (outbox/f'{bundle.name}.md').write_text('The first half')
    try:
        threading.Thread(target=half_answer, daemon=True).start()   # interrupted once the half is on screen
        res = k.run('%%prompt -m deaddrop/gamma\nA long question', timeout=30,
                    on_message=shows('The first half', k.km.interrupt_kernel))
        assert k.value('1 + 1') == '2'
    finally: k.shutdown()
    assert res.status == 'error' and res.reply['data']['text/plain'].startswith('The first half')
    [bundle] = [p for p in inbox.iterdir() if not p.name.startswith('.')]
    assert (bundle/'cancelled').exists()
    assert subprocess.run(CLI + ['next', 'gamma'], capture_output=True).returncode == 1   # skipped: nothing waiting


def test_a_timeout_ends_the_wait_with_a_clear_message(tmp_path):
    cli('new', 'delta')
    k = kernel(tmp_path, 'nb')
    try:
        k.run('%config BoopMagics.deaddrop_timeout = 0.5')
        res = k.run('%%prompt -m deaddrop/delta\nAnyone?', timeout=30)
    finally: k.shutdown()
    assert res.status == 'error' and 'No reply text for 0.5 s' in res.text and res.text.count('\n') <= 2
    [bundle] = [p for p in (tmp_path/'dead_drop'/'delta'/'inbox').iterdir() if not p.name.startswith('.')]
    assert not (bundle/'cancelled').exists()   # still pending: re-running the cell follows it again


def test_a_restarted_kernel_re_running_the_cell_follows_the_pending_reply(tmp_path):
    cli('new', 'eps')
    inbox, outbox = tmp_path/'dead_drop'/'eps'/'inbox', tmp_path/'dead_drop'/'eps'/'outbox'
    cell = '%%prompt --no-context -m deaddrop/eps\nStill there?'
    first = kernel(tmp_path, 'nb')
    first.send(cell, cell_id='cell-7')
    [bundle] = wait_for(lambda: [p for p in inbox.iterdir() if not p.name.startswith('.')])
    first.kc.stop_channels()
    first.km.shutdown_kernel(now=True)   # killed while waiting: no cancel marker
    assert not (bundle/'cancelled').exists()
    d = tmp_path/'nb2'
    d.mkdir()
    second = KernelSession(d)
    try:
        second.run('%load_ext boopiter_ext')
        reply = outbox/f'{bundle.name}.md'
        reply.write_text('Yes, ')   # the answer was under way when the kernel died
        def finish():
            with open(reply, 'a') as f: f.write('still here.\n---DONE---\n')
        res = second.run(cell, cell_id='cell-7', timeout=30, on_message=shows('Yes, ', finish))   # the rest, once followed
    finally: second.shutdown()
    assert res.reply['data']['text/plain'] == 'Yes, still here.'
    assert [p.name for p in inbox.iterdir() if not p.name.startswith('.')] == [bundle.name]   # no second prompt
    assert res.reply['metadata']['boopiter']['prompt_id'] == bundle.name
