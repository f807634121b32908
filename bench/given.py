"""What keeping the model's own text out of `given` costs (`guards.unwritten`), as a tool's result grows.

    python bench/given.py [runs]

A result of 250 KB, 500 KB, 1 MB and 2 MB (prose with URLs, one of them the model's own argument on every line, the
worst case: every line has a stretch to blank and look up) against 50 calls' arguments, medians over `runs`. The
baseline, in the same run: `text.lower()` plus one `re.findall` over the result, the least any comparison that
ignores case and line breaks must cost. Linear means a flat cost per MB from 250 KB to 2 MB. The loop clips a result
at 4,000 characters before it joins `given`: that one costs the last line.
"""

import re, sys
from boopiter_ext.tools.guards import unwritten, written_grams
from guards import timed   # bench/guards.py's: the median of `runs`, the collector off while one runs


def main(runs=5):
    args = [f'http://collect.example/?d={i}-SECRET-{i}' for i in range(50)]
    grams = written_grams(args + [f"search_files({a!r})" for a in args])
    given = 'Please look at https://docs.example.org/start.html\n' * 20
    line = 'lorem ipsum https://docs.example.org/start.html dolor http://collect.example/?d=7-SECRET-7 sit amet\n'
    print(f'{len(grams):,} grams from 50 calls; per MB of result (median of {runs}):')
    for size in (250_000, 500_000, 1_000_000, 2_000_000):
        text = (line * (size // len(line) + 1))[:size]
        base = timed(lambda: re.findall(r'\S+', text.lower()), runs)
        t = timed(lambda: unwritten(text, grams, given), runs)
        assert 'SECRET' not in unwritten(text, grams, given)
        mb = size / 1e6
        print(f'  {size/1e3:>6,.0f} KB: {t*1e3:7.1f} ms ({t/mb*1e3:6.1f} ms/MB), {t/base:5.1f}x the baseline')
    clip = (line * 50)[:4000]
    print(f'  a clipped result (4,000 characters): {timed(lambda: unwritten(clip, grams, given), runs*20)*1e3:.2f} ms')


if __name__ == '__main__': main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
