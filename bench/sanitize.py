"""Making a reply safe (`render/sanitize.safe_blocks`), construct by construct: per-character cost at two sizes.

    python bench/sanitize.py [runs] [small_kb] [big_kb] [NAME ...]

Every inline and block construct of `tests/markdown_corpus.py` (emphasis, links, images, code spans, autolinks,
entities, inline HTML, math in four forms, breaks; quotes, lists and their nesting, headings, fences, indented code,
tables, HTML blocks, references, rules), each repeated, nested and left unclosed, is made safe at `small_kb` and
`big_kb` (default 8 and 64 KB: one piece each, see `safe_blocks`' `size`; a text over 64 KB pays one more block
parse to be cut, a step of up to 2x for block-heavy constructs, not a rate that grows), the two timed in turn `runs`
times (default 3). Prints CPU µs per character at each size (best and median), the ratio of the median rates (and of
the best): 1 is linear, 8 quadratic (the sizes are 8x apart), and each construct's median rate against the baseline's.
Target: every ratio below 2, and no construct raising. Baseline: an ordinary long reply (prose, lists and python
blocks, `browser.long_markdown`) at the same sizes, in the same run.
"""

import statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT/'tests')]
from markdown_corpus import CONSTRUCTS, construct   # noqa: E402
from boopiter_ext.render.sanitize import safe_blocks   # noqa: E402


def ordinary(size):
    "An ordinary reply of about `size` characters: paragraphs with marks, lists and python blocks in turn."
    from browser import long_markdown
    return long_markdown(size // 5)[:size]


def rates(small, big, runs)->tuple:
    """(best, median) CPU µs per character of making each text safe (this process's CPU time: other jobs on a shared
    machine add none of theirs), timed in turn (small, big, small, ...) so what load is left falls on both."""
    times = {small: [], big: []}
    for _ in range(runs):
        for text in (small, big):
            t = time.process_time()
            safe_blocks(text)
            times[text].append((time.process_time() - t) / len(text) * 1e6)
    return [(min(times[x]), statistics.median(times[x])) for x in (small, big)]


def main(runs=3, small=8, big=64, *names):
    safe_blocks('warm up')
    cases = [('ordinary reply', 'baseline', ordinary)] + [
        (n, f, lambda size, n=n, f=f: construct(n, f, size)) for n, f in CONSTRUCTS if not names or n in names]
    print(f'CPU µs per character, best and median of {runs}, at {small} and {big} KB; ratio of the medians and of the '
          'bests (1: linear, 8: quadratic); x base: the median rate at the big size over the ordinary reply\'s')
    print(f'{"construct":20} {"form":9} {f"{small} KB best":>12} {"median":>8} {f"{big} KB best":>12} {"median":>8} '
          f'{"ratio":>6} {"(best)":>6} {"x base":>6}')
    worst, costly, base = [], [], None
    for name, form, make in cases:
        (a, am), (b, bm) = rates(make(small * 1000), make(big * 1000), runs)
        base = base or bm
        worst.append((bm / am, b / a, name, form))
        costly.append((bm, name, form))
        print(f'{name:20} {form:9} {a:12.1f} {am:8.1f} {b:12.1f} {bm:8.1f} {bm / am:6.2f} {b / a:6.2f} {bm / base:6.1f}',
              flush=True)
    ratios = sorted(r for r, *_ in worst[1:])
    print(f'median-rate ratios over {len(ratios)} cases: median {statistics.median(ratios):.2f}, highest: '
          + ', '.join(f'{n} {f} {r:.2f} (best {rb:.2f})' for r, rb, n, f in sorted(worst[1:], reverse=True)[:3]))
    print('costliest per character (median, big size): '
          + ', '.join(f'{n} {f} {c:.0f} µs ({c / base:.0f}x base)' for c, n, f in sorted(costly[1:], reverse=True)[:3]))


if __name__ == '__main__':
    args = sys.argv[1:]
    nums = [int(a) for a in args[:3] if a.isdigit()]
    main(*nums, *args[len(nums):])
