"""What `%load_ext boopiter_ext` costs on top of a bare IPython start (target: under 150 ms).

    python bench/load_ext.py [runs]

Each run is a fresh interpreter (nothing cached in memory): it times creating an InteractiveShell,
then loading the extension. Medians over the runs; the ratio is (start + load) / start.
"""

import json, statistics, subprocess, sys

PROBE = r'''
import json, sys, time
t0 = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
t1 = time.perf_counter()
ip.run_line_magic('load_ext', 'boopiter_ext')
t2 = time.perf_counter()
heavy = [m for m in ('litellm', 'lisette', 'requests', 'nbformat', 'ipywidgets') if m in sys.modules]
print(json.dumps(dict(start=t1 - t0, load=t2 - t1, heavy=heavy)))
'''


def main(runs=9):
    rows = [json.loads(subprocess.run([sys.executable, '-c', PROBE], capture_output=True, text=True, check=True,
                                      env={'BOOPITER_BENCH': '1', 'PATH': '/usr/bin:/bin',
                                           'IPYTHONDIR': '/tmp/boopiter-bench-ipython'}).stdout) for _ in range(runs)]
    start = statistics.median(r['start'] for r in rows) * 1000
    load = statistics.median(r['load'] for r in rows) * 1000
    print(f'bare IPython start      {start:7.1f} ms (median of {runs})')
    print(f'%load_ext boopiter_ext  {load:7.1f} ms   target < 150 ms: {"ok" if load < 150 else "MISSED"}')
    print(f'ratio (start+load)/start {(start + load) / start:6.2f}x')
    print(f'heavy modules imported by load: {rows[-1]["heavy"] or "none"}')


if __name__ == '__main__': main(*(int(a) for a in sys.argv[1:]))
