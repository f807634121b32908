"""Dead-drop follower costs: CPU time while idle-waiting, and a 1 MB reply written in 4 KB appends.

    python bench/deaddrop.py [idle_seconds]

Prints:

1. CPU time (user + system) of a follower waiting `idle_seconds` (default 10) for a reply that never
   starts, at the default 0.25 s poll (target < 0.3 s for 10 s).
2. Wall time from the first of 256 appends of 4 KB to the `done` event, and whether the text is exact.
"""

import sys, tempfile, threading, time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]
from boopiter_ext.models import deaddrop as dd   # noqa: E402
from boopiter_ext.errors import ReplyStalled   # noqa: E402


def idle_cpu(root, secs):
    pid = dd.drop_prompt(root, 's', 'q')
    c0 = time.process_time()
    try: list(dd.follow_reply(root, 's', pid, timeout=secs))
    except ReplyStalled: pass
    return time.process_time() - c0


def megabyte(root):
    pid = dd.drop_prompt(root, 's', 'q')
    body = (b'0123456789abcde\n' * 65536)
    raw = body + b'---DONE---\n'
    def write():
        for i in range(0, len(raw), 4096):
            with open(root/'s'/'outbox'/f'{pid}.md', 'ab') as f: f.write(raw[i:i+4096])
    t0 = time.perf_counter()
    threading.Thread(target=write).start()
    got = ''.join(v for k,v in dd.follow_reply(root, 's', pid, timeout=30) if k == 'content')
    return time.perf_counter() - t0, got == body.decode().rstrip('\n')


if __name__ == '__main__':
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    with tempfile.TemporaryDirectory() as d:
        root = dd.deaddrop_root(environ={}, setting=d)
        dd.new_session(root, 's')
        cpu = idle_cpu(root, secs)
        print(f'idle follower: {cpu:.3f} s CPU over {secs:g} s (target < {0.03 * secs:.2f} s)')
        wall, exact = megabyte(root)
        print(f'1 MB in 4 KB appends: {wall:.3f} s to done, exact={exact}')
