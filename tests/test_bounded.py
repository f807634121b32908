"""Bounded replies in real kernels: an over-long reply stops at `max_reply` with one line, keeps what arrived, and the
kernel answers the next prompt; an endless dead-drop reply stops too, its memory bounded."""

import threading, time
from pathlib import Path
import pytest
from kernels import KernelSession
from boopiter_ext.models import deaddrop as dd

pytestmark = pytest.mark.slow
MODEL = 'qwen3:1.7b'


def test_a_reply_past_max_reply_stops_with_one_line_and_keeps_what_arrived(kernel, srv):
    long_reply = ''.join(f'word{i} ' for i in range(1000))
    srv.script(long_reply)
    kernel.run('%config BoopMagics.max_reply = 1000')
    res = kernel.run(f'%%prompt -m {MODEL}\nTalk a lot')
    assert res.status == 'error' and res.error['ename'] == 'ReplyTooLong' and len(res.error['traceback']) == 1
    assert 'past 1,000 characters (`max_reply`)' in res.error['evalue'] and 'kept above' in res.error['evalue']
    plain = res.reply['data']['text/plain']
    assert plain.startswith(long_reply[:1000]) and plain[1000:] == '\n\n*(too long: stopped at `max_reply` characters)*'
    assert res.reply['metadata']['boopiter']['status'] == 'too long'
    srv.script('Short and sweet.')
    res = kernel.run(f'%%prompt -m {MODEL}\nAnd now briefly?')
    assert res.status == 'ok' and res.reply['data']['text/plain'] == 'Short and sweet.'


def kernel_rss(k)->int:
    status = Path(f'/proc/{k.km.provisioner.pid}/status').read_text()
    return int(next(ln for ln in status.splitlines() if ln.startswith('VmHWM:')).split()[1]) * 1024


def test_an_endless_dead_drop_reply_is_stopped_and_memory_stays_bounded(tmp_path):
    root = dd.deaddrop_root(environ={}, setting=str(tmp_path/'drop'))
    dd.new_session(root, 'endless')
    stop = threading.Event()
    def responder():   # writes 1 MB every 10 ms until told to stop: it never ends the reply
        p = dd.await_prompt(root, 'endless', timeout=60)
        with open(root/'endless'/'outbox'/f'{p["id"]}.md', 'a') as f:
            while not stop.wait(0.01):
                f.write('all work and no play ' * 50_000)
                f.flush()
    with KernelSession(tmp_path, env={'BOOPITER_DEADDROP_DIR': str(root)}) as k:
        assert k.run('%load_ext boopiter_ext').status == 'ok'
        k.run('%config BoopMagics.max_reply = 300000')
        writer = threading.Thread(target=responder, daemon=True)
        writer.start()
        t0 = time.monotonic()
        res = k.run('%%prompt -m deaddrop/endless --no-context\ngo on', timeout=120)
        took, writing = time.monotonic() - t0, writer.is_alive()
        stop.set()
        assert res.error['ename'] == 'ReplyTooLong' and res.reply['metadata']['boopiter']['status'] == 'too long'
        assert len(res.reply['data']['text/plain'].partition('\n\n*(too long')[0]) == 300_000
        assert took < 60 and writing                            # the bound stopped it: the writer never did
        assert kernel_rss(k) < 600 * (1 << 20)                  # not the size of what was written
        assert k.run('1 + 1').status == 'ok'
