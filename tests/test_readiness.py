"""Getting the model ready before the first prompt (readiness.py), and the waiting line that shows what a prompt waits
for (view.py): the warm-up sends exactly what the prompt will send up to its question, a cell cancels it, a picked
Ollama model is loaded with the window its prompt asks for, and the wait is told with its step, its time and its why."""

import io, json, sys, threading, time
import nbformat, pytest
from conftest import run
from ollama_server import OllamaTestServer, free_port
from kernels import KernelSession
from boopiter_ext.context.build import Cell
from boopiter_ext.core.readiness import Readiness, known_question, next_prompt, prefix
from boopiter_ext.models.routes import LOCAL_ID

WHY = 'Ollama is not reachable'


class FakeLocal:
    "Stands in for `LocalModel`: the embedded model's server is `url` (the test server speaks its API)."
    n_ctx, max_tokens = 4096, 64
    def __init__(self, url=None): self.url, self.starts = url, 0
    def available(self): return True
    def ensure(self, progress=None):
        self.starts += 1
        return self.url
    def status(self): return ''
    def stop(self): pass


@pytest.fixture
def engine():
    "Stands in for llama.cpp's server: the test server, with the embedded model's name."
    with OllamaTestServer([dict(name='smollm2-135m')]) as s: yield s


def magics(ip): return ip.magics_manager.registry['BoopMagics']


def ready(ip, local=None)->Readiness:
    "The extension loaded in `ip`, the embedded model faked by `local`, and readiness started (as `%load_ext` will)."
    run(ip, '%load_ext boopiter_ext')
    m = magics(ip)
    if local is not None: m.router._local = local
    r = getattr(m, 'readiness', None)
    if r is None:
        r = m.readiness = Readiness(m.assistant, ip)
        r.start()
    return r


def until(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline: return False
        time.sleep(0.02)
    return True


def notebook(path, cells):
    "Write a notebook of (cell id, kind, source) to `path`."
    mk = dict(code=nbformat.v4.new_code_cell, markdown=nbformat.v4.new_markdown_cell)
    nb = nbformat.v4.new_notebook(cells=[mk[k](src, id=cid) for cid,k,src in cells])
    nbformat.write(nb, path)
    return path


# -- which prompt comes next

def test_the_next_prompt_is_the_first_prompt_cell_below_the_cell_run_last():
    layout = [Cell('# notes', 'markdown', cell_id='a'), Cell('x = 1', cell_id='b'),
              Cell('%%prompt\nWhy?', 'prompt', cell_id='c'), Cell('y = 2', cell_id='d'),
              Cell('%%prompt\nAnd y?', 'prompt', cell_id='e')]
    assert next_prompt([Cell('x = 1', cell_id='b')], layout).cell_id == 'c'
    assert next_prompt([Cell('x = 1', cell_id='b'), Cell('y = 2', cell_id='d')], layout).cell_id == 'e'
    assert next_prompt([Cell('y = 2')], layout).cell_id == 'e'                      # found by its text (no id)
    new = next_prompt([Cell('%%prompt\nAnd y?', 'prompt', cell_id='e')], layout)   # nothing below: a new cell
    assert new.kind == 'prompt' and new.cell_id not in 'abcde'
    assert next_prompt([Cell('z = 3', cell_id='q')], layout).cell_id.startswith('boopiter-next-')   # not in it
    assert next_prompt([], layout).cell_id.startswith('boopiter-next-') and next_prompt([Cell('x')], None).kind == 'prompt'


# -- the warm-up's messages are the prompt's, up to its question

def real_messages(ip, question, cell_id):
    "What the prompt cell `cell_id` sends once it runs: the assistant's preview with that cell running."
    m = magics(ip)
    m.recorder.current = Cell(f'%%prompt\n{question}', 'prompt', cell_id=cell_id)
    try: return m.assistant.preview(question, m.settings(nb=m.notebook()))['messages']
    finally: m.recorder.current = None


def warm_messages(ip, question=True):
    m = magics(ip)
    return prefix(m.assistant, m.settings(nb=m.notebook()), LOCAL_ID, m.notebook(), question)[0]


def same_up_to_the_question(warm, real, question):
    assert warm[:-1] == real[:-1]                                    # system prompt (tools), earlier turns: equal
    assert warm[-1]['content'].endswith('---\n\n') or warm[-1]['content'] == ''
    assert real[-1]['content'] == warm[-1]['content'] + question     # the question follows, nothing else differs


@pytest.mark.parametrize('saved', [True, False])
def test_the_warm_up_sends_what_the_next_prompt_sends_up_to_its_question(shell, monkeypatch, tmp_path, saved):
    "With the notebook's layout known (cells below the prompt left out), and without it (a prompt added at the end)."
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    if saved:
        monkeypatch.setenv('BOOPITER_NOTEBOOK', str(notebook(tmp_path/'nb.ipynb', [
            ('a', 'markdown', '# Prices\nIn euros.'), ('b', 'code', 'prices = [3.5, 2.0]\nprint(sum(prices))'),
            ('c', 'code', '%%prompt\nWhy 5.5?'), ('d', 'code', 'print("below")'), ('e', 'code', '%%prompt\nAnd now?')])))
    r = ready(shell, FakeLocal())
    r.stop()   # built by hand here: no thread
    shell.run_cell('prices = [3.5, 2.0]\nprint(sum(prices))', store_history=True, cell_id='b')
    warm, real = warm_messages(shell, question=False), real_messages(shell, 'Why 5.5?', 'c' if saved else 'new')
    same_up_to_the_question(warm, real, 'Why 5.5?')
    assert 'read_file' in warm[0]['content'] and '5.5' in warm[-1]['content']   # the tools, the cell's output
    assert ('below' in json.dumps(warm)) is False and ('Prices' in json.dumps(warm)) is saved
    assert (warm_messages(shell) == real) is saved            # a question the notebook holds is warmed too
    shell.run_cell('print("below")', store_history=True, cell_id='d')   # the next prompt is now the one below it
    real = real_messages(shell, 'And now?', 'e' if saved else 'new2')
    same_up_to_the_question(warm_messages(shell, question=False), real, 'And now?')
    assert (warm_messages(shell) == real) is saved


def test_a_question_is_warmed_only_when_sending_it_needs_nothing_from_the_kernel():
    assert known_question(Cell('%%prompt\nWhy 5.5?\n', 'prompt')) == 'Why 5.5?'
    assert known_question(Cell('%%prompt -m qwen3:1.7b\nWhy?', 'prompt')) == ''      # options: another request
    assert known_question(Cell('%%prompt\nWhy is $`df` empty?', 'prompt')) == ''      # a value read when it runs
    assert known_question(Cell('%%prompt\nFix it with &`clean`.', 'prompt')) == ''
    assert known_question(Cell('%%prompt\n', 'prompt')) == ''


# -- the embedded model: warmed while idle, never in a prompt's way

def test_it_warms_the_embedded_model_at_load_and_after_each_cell_with_one_token(shell, engine, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    srv, local = engine, FakeLocal(engine.url)
    r = ready(shell, local)
    assert r.wait(10) and r.last['action'] == 'warmed' and local.starts == 1   # started and warmed at load
    [body] = srv.chats()
    assert body['max_tokens'] == 1 and body['stream'] and body['return_progress'] and body['model'] == 'smollm2-135m'
    assert body['messages'][0]['role'] == 'system'
    run(shell, 'x = 41')                                     # a cell: the next prompt's messages grew, warm them
    assert r.wait(10) and len(srv.chats()) == 2 and 'x = 41' in srv.chats()[-1]['messages'][-1]['content']
    r.ask()                                                   # nothing changed and no cell ran: nothing to send
    assert r.wait(10) and len(srv.chats()) == 2
    r.stop()
    assert r.shell.events.callbacks['pre_run_cell'].count(r.pre_run_cell) == 0 and r._picked not in r.assistant.listeners
    assert r._thread is None


def test_the_engine_starts_at_load_even_while_cells_keep_the_kernel_busy(shell, engine, monkeypatch):
    "Starting it takes none of the kernel's cores (a child process loads the weights): only its warm-up waits for idle."
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    local = FakeLocal(engine.url)
    run(shell, '%load_ext boopiter_ext')
    magics(shell).router._local = local
    r = Readiness(magics(shell).assistant, shell)
    r.pre_run_cell()                                          # "Run all": a cell is running when it starts
    r.start()
    assert until(lambda: local.starts == 1) and engine.chats() == []
    r.post_run_cell()
    assert r.wait(10) and len(engine.chats()) == 1
    r.stop()


def test_a_cell_that_starts_hangs_up_the_warm_up_under_way_and_none_starts_until_it_ends(shell, engine, monkeypatch):
    "One slot on the server: a warm-up still reading would make the prompt queue behind it."
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    srv = engine
    srv.script('', fault='stall', stall_s=30)                 # the warm-up's reply never comes
    r = ready(shell, local := FakeLocal(srv.url))
    assert until(lambda: srv.streams and r._response is not None)
    t = time.monotonic()
    r.pre_run_cell()                                          # what a cell starting does (a prompt cell included)
    assert until(lambda: srv.streams[0].disconnected, 5) and time.monotonic() - t < 4   # at once, not at its 30 s
    assert r.wait(5) and r.last == {}                      # the pass ended, having warmed nothing
    r.ask()
    assert until(lambda: local.starts == 2)                   # the pass is under way, waiting for the kernel's idle
    time.sleep(r.delay * 3)
    assert len(srv.chats()) == 1                              # held: nothing is sent while the cell runs
    r.post_run_cell()
    assert r.wait(10) and len(srv.chats()) == 2 and r.last['action'] == 'warmed'
    r.stop()


# -- Ollama: a picked model loads when picked

def test_a_picked_ollama_model_loads_when_picked_with_the_window_and_keep_alive_of_its_prompts(shell, srv, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    def loads(): return [q.json for q in srv.requests if q.path == '/api/generate' and q.json.get('keep_alive') != 0]
    r = ready(shell)
    assert r.wait(10) and loads() == [] and not srv.loaded   # none picked: the first prompt loads the one it picks
    run(shell, '%config BoopMagics.keep_alive = "10"')
    assert r.wait(10)
    shell.run_line_magic('boop', 'model qwen3:1.7b')
    assert r.wait(10)
    assert loads() == [dict(model='qwen3:1.7b', keep_alive='10m', options=dict(num_ctx=4096))]
    assert srv.loaded == {'qwen3:1.7b'}
    assert magics(shell).assistant._tidier.wait(10)          # the pick's tidying (its `/api/ps`) is over too
    srv.reset()
    run(shell, 'x = 1')                                       # a cell: nothing new to load, and no request at all
    assert r.wait(10) and srv.requests == []
    run(shell, '%%prompt\nhi')                                # the prompt asks for the window the model was loaded with
    assert srv.last_chat()['options']['num_ctx'] == 4096 and srv.last_chat()['keep_alive'] == '10m'
    run(shell, '%config BoopMagics.keep_alive = "0"')        # keep-alive 0: loading it would only unload it again
    assert r.wait(10)
    srv.reset()
    shell.run_line_magic('boop', 'model gemma3:4b')
    assert r.wait(10) and magics(shell).assistant._tidier.wait(10) and loads() == []   # unloads aside
    r.stop()


# -- the waiting line (view.py)

class Pub:
    "A display publisher that keeps what it is asked to publish, with the thread and time it came from."
    def __init__(self): self.sent = []
    def publish(self, data, md, transient=None, update=False):
        self.sent.append(dict(data=data, md=md, update=update, t=time.monotonic(), thread=threading.current_thread().name))


def kernel_view(route=None, ledger=None):
    from boopiter_ext.faces.view import KernelView
    pub = Pub()
    ledger = ledger or dict(items=[], tokens=1234, window=4096)
    return KernelView(type('Shell', (), dict(display_pub=pub))(), route, ledger), pub


FALLBACK = dict(name='embedded llama.cpp', picked_by='auto',
                note=f'{WHY} at http://127.0.0.1:9, so the tiny embedded model answers: fine for a demo')


def test_the_waiting_line_says_the_step_the_time_and_why_until_the_first_token(monkeypatch):
    from boopiter_ext.render.reply import REPLY_MIME
    from boopiter_ext.models.stream import Reply
    view, pub = kernel_view(FALLBACK)
    view.tick = 0.05
    step = ['starting the engine']
    view.waiting(LOCAL_ID, progress=lambda: step[0])
    first = pub.sent[0]
    assert first['thread'] == threading.current_thread().name and not first['update']
    assert first['md']['boopiter'] == dict(reply=True, model=LOCAL_ID, status='waiting', why=FALLBACK['note'],
                                           step='starting the engine')
    assert first['data'][REPLY_MIME]['note'] == f'{FALLBACK["note"]} · starting the engine'   # the frontend's live line
    assert WHY in first['data']['text/markdown'] and 'starting the engine' in first['data']['text/markdown']
    step[0] = 'loading the weights'
    assert until(lambda: 'loading the weights' in pub.sent[-1]['data']['text/markdown'], 2)
    step[0] = ''                                              # started: now it reads the prompt
    assert until(lambda: pub.sent[-1]['md']['boopiter']['step'] == 'reading ~1,234 prompt tokens', 2)
    assert until(lambda: '· 1 s …' in pub.sent[-1]['data']['text/markdown'], 3)   # the time so far, in whole seconds
    assert {frozenset(s['data']) for s in pub.sent} == {frozenset(first['data'])}  # one set of mime types throughout
    reply = Reply(LOCAL_ID)
    reply.add_content('Hello')
    view.update(reply)
    n = len(pub.sent)
    time.sleep(0.3)
    assert len(pub.sent) == n and pub.sent[-1]['md']['boopiter']['status'] == 'streaming'   # no tick after the reply
    reply.finish('done')
    out = view.final(reply)
    assert out['data']['text/markdown'].startswith(f'*ℹ {WHY} at http://127.0.0.1:9')   # why, above the reply
    assert out['data'][REPLY_MIME]['note'].startswith(WHY) and out['data']['text/plain'] == 'Hello'


def test_why_is_said_only_when_the_embedded_model_answers_unpicked():
    from boopiter_ext.faces.view import why_line
    assert why_line(LOCAL_ID, FALLBACK) == FALLBACK['note']
    assert why_line(LOCAL_ID, dict(FALLBACK, picked_by='cell option')) == ''     # asked for by name: nothing to explain
    assert why_line('qwen3:1.7b', dict(FALLBACK, name='Ollama')) == ''


def test_the_terminal_says_starting_the_model_then_clears_for_the_reply(monkeypatch):
    from boopiter_ext.models.stream import Reply
    from boopiter_ext.faces.view import TerminalView
    out = io.StringIO()
    monkeypatch.setattr(sys, 'stdout', out)
    view = TerminalView(None, FALLBACK, dict(items=[], tokens=900, window=4096))
    view.tick = 0.05
    step = ['starting the engine']
    view.waiting(LOCAL_ID, progress=lambda: step[0])
    step[0] = 'loading the weights'
    assert until(lambda: 'loading the weights' in out.getvalue(), 2)
    step[0] = ''
    assert until(lambda: 'reading ~900' in out.getvalue(), 2)
    reply = Reply(LOCAL_ID)
    reply.add_content('Hi there')
    reply.finish('done')
    view.final(reply)
    lines = out.getvalue().splitlines()
    assert lines[:4] == [f'[{FALLBACK["note"]}]', 'starting the model: starting the engine …',
                         'starting the model: loading the weights …', 'reading ~900 prompt tokens …']
    assert lines[4] == 'Hi there' and out.getvalue().count(WHY) == 1   # each step once (not a tty: no rewrites)


# -- for real: the embedded model, warmed while the user reads

def kernel_ready(k):
    "Start readiness in the kernel unless `%load_ext` did; its pass count."
    k.run("_m = get_ipython().magics_manager.registry['BoopMagics']\n"
          "if getattr(_m, 'readiness', None) is None:\n"
          "    from boopiter_ext.core.readiness import Readiness\n"
          "    _m.readiness = Readiness(_m.assistant, get_ipython())\n"
          "    _m.readiness.start()")


def peek(k, expr):
    "`expr` evaluated in the kernel without running a cell (no `pre_run_cell`, which would cancel a warm-up)."
    msg_id = k.kc.execute('', silent=True, store_history=False, user_expressions=dict(v=expr))
    while (reply := k.kc.get_shell_msg(timeout=30))['parent_header'].get('msg_id') != msg_id: pass
    return reply['content']['user_expressions']['v']['data']['text/plain']


@pytest.mark.slow
@pytest.mark.embedded
def test_the_first_prompt_finds_the_notebook_in_the_embedded_models_cache(tmp_path):
    with KernelSession(tmp_path, env={'OLLAMA_HOST': f'127.0.0.1:{free_port()}'}) as k:
        k.run('%load_ext boopiter_ext')
        kernel_ready(k)
        k.run('%config BoopMagics.max_tokens = 8')
        k.run("prices = [3.5, 2.0, 7.25]\nfor p in prices:\n    total = sum(prices)\n    print(total)")
        # 20 s alone, 53 s beside two busy cores under coverage, past 50 s once in CI: the engine starts, then reads
        warmed = until(lambda: peek(k, '_m.readiness.wait(0) and _m.readiness._warm is not None') == 'True', 180)
        assert warmed, peek(k, 'dict(passes=_m.readiness.passes, last=_m.readiness.last, progress=_m.readiness.progress)')
        res = k.run('%%prompt\nWhy does the loop print the same number three times?', timeout=60)
        md = res.reply['metadata']['boopiter']
        assert md['status'] == 'done' and md['cached_tokens'] >= md['prompt_tokens'] - 30, md   # only the question read
        waiting = [c['metadata']['boopiter'] for _, kind, c in res.messages if kind.endswith('display_data')
                   and c['metadata'].get('boopiter', {}).get('status') == 'waiting']
        assert waiting and waiting[0]['why'].startswith(WHY) and waiting[0]['step'].startswith('reading ~')
        assert res.reply['data']['text/markdown'].startswith(f'*ℹ {WHY}')


@pytest.mark.slow
@pytest.mark.embedded
def test_a_cell_cancels_a_warm_up_of_the_real_engine_within_a_batch(shell, monkeypatch):
    "The server gives its one slot back at the end of the batch it is reading (128 tokens), not of the whole prompt."
    import requests
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    run(shell, '%load_ext boopiter_ext')
    run(shell, 'print("\\n".join(f"line {n} of the report" for n in range(300)))')
    r = ready(shell)
    try:
        def read(): return (r.progress.get('processed') or 0) - (r.progress.get('cached') or 0)
        assert until(lambda: read() >= 128, 180)                                # the engine started, a batch read
        p, t = dict(r.progress), time.monotonic()
        rate = (p['processed'] - p['cached']) / max(p['time_ms'], 1) * 1000     # tokens a second, as it reads them
        def hi():   # seconds from `t` to the answer, less the engine's own time on it
            got = requests.post(magics(shell).router.local.url + '/v1/chat/completions', timeout=60,
                                json=dict(model='smollm2-135m', messages=[dict(role='user', content='Hi')], max_tokens=1))
            return time.monotonic() - t - sum(got.json()['timings'][k] for k in ('prompt_ms', 'predicted_ms')) / 1000
        r.pre_run_cell()                                                        # a cell starts: the prompt, say
        queued = hi()
        t = time.monotonic()
        overhead = hi()   # the same request to the idle engine: HTTP and a busy machine's scheduling, measured now
        left = (p['tokens'] - p['processed']) / rate                              # what reading the rest would take
        assert p['tokens'] > 1000 and queued - overhead < left / 2, (queued, overhead, left, p)   # a batch at most
    finally: r.stop()
