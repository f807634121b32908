"""Bounded replies: a 20 MB dead-drop reply and an endless one, against a reply of exactly `max_reply` characters.

    python bench/bounded.py [runs]

Each case runs `%%prompt -m deaddrop/bench` in a fresh real kernel (so its peak memory, VmHWM, is the case's own)
while a responder thread in this process answers through the dead-drop files, appending 1 MB at a time:

- baseline: a reply of exactly `max_reply` (400,000) characters that ends normally;
- 20 MB:    a 20,000,000-character reply (stopped at `max_reply`, marked too long);
- endless:  a responder that never stops writing (stopped at `max_reply`);
- 20 MB, no bound (`max_reply = 0`): the whole reply shown, updates spaced as it grows (for reference).

Prints wall time (send to idle) and kernel peak RSS, medians over `runs` (default 3), and each case's ratios to
the baseline measured in the same run. Target: the bounded cases within 1.5x of the baseline on both.
"""

import statistics, sys, tempfile, threading, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT/'tests')]
from kernels import KernelSession            # noqa: E402
from boopiter_ext.models import deaddrop as dd      # noqa: E402

MB = 1 << 20
LINE = 'lorem ipsum dolor sit amet, <b>consectetur</b> `adipiscing` elit\n\n'   # 64 characters, two blocks


def respond(root, chars, stop):
    "Answer the next prompt of session `bench` with `chars` characters (None: until `stop` is set), 1 MB a write."
    p = dd.await_prompt(root, 'bench', timeout=60)
    path = root/'bench'/'outbox'/f'{p["id"]}.md'
    block, sent = (LINE * (MB // len(LINE) + 1))[:MB], 0
    with open(path, 'a', encoding='utf-8') as f:
        while (chars is None or sent < chars) and not stop.is_set():
            n = MB if chars is None else min(MB, chars - sent)
            f.write(block[:n])
            f.flush()
            sent += n
        if chars is not None: f.write('\n---DONE---\n')


def peak_rss(pid)->int:
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmHWM:'): return int(line.split()[1]) * 1024
    return 0


def case(chars, max_reply=400_000):
    "(seconds, kernel peak bytes, status) of one prompt answered with `chars` characters (None: endlessly)."
    with tempfile.TemporaryDirectory() as d:
        root = dd.deaddrop_root(environ={}, setting=d)
        dd.new_session(root, 'bench')
        with KernelSession(d, env={'BOOPITER_DEADDROP_DIR': str(root)}) as k:
            k.run('%load_ext boopiter_ext')
            k.run(f'%config BoopMagics.max_reply = {max_reply}')
            k.run("get_ipython().magics_manager.registry['BoopMagics']._warm.join()")   # its imports are not ours
            stop = threading.Event()
            writer = threading.Thread(target=respond, args=(root, chars, stop), daemon=True)
            writer.start()
            t0 = time.perf_counter()
            res = k.run('%%prompt -m deaddrop/bench --no-context\ngo', timeout=600)
            took = time.perf_counter() - t0
            stop.set()
            writer.join(30)
            status = (res.reply or {}).get('metadata', {}).get('boopiter', {}).get('status')
            return took, peak_rss(k.km.provisioner.pid), status


def main(runs=3):
    cases = {'baseline (400,000 chars)': (400_000, 400_000), '20 MB reply': (20_000_000, 400_000),
             'endless reply': (None, 400_000), '20 MB reply, no bound': (20_000_000, 0)}
    got = {name: [case(chars, bound) for _ in range(runs)] for name,(chars, bound) in cases.items()}
    base_t = statistics.median(t for t,_,_ in got['baseline (400,000 chars)'])
    base_m = statistics.median(m for _,m,_ in got['baseline (400,000 chars)'])
    for name, rows in got.items():
        t, m = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(f'{name:<26} {t:6.2f} s ({t/base_t:4.2f}x)  peak {m/MB:6.1f} MB ({m/base_m:4.2f}x)  '
              f'status {", ".join(sorted({r[2] or "?" for r in rows}))}')


if __name__ == '__main__': main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
