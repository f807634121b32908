"""What the guards cost as a block or a reply grows: planning and checking against parsing, in one run.

    python bench/guards.py [runs]

1. Blocks of 500, 2,000 and 10,000 call lines (`add_numbers(7, b=7)`, a different number each line), medians over
   `runs`: `ast.parse` of the block (the baseline: no guard can cost less than parsing it), then `plan_calls` (limits
   lifted, to see the growth) plus `check_call` on every call. Linear means flat microseconds per line and a flat
   ratio to parsing (it was quadratic: `ast.get_source_segment` split the whole block again for every call).
2. The time `plan_calls` takes to refuse a block over its default limits (10,000 lines, and a 10 MB block).
3. Adversarial replies at 2,000, 8,000 and 32,000 repeats: `python_blocks` on fences, `recover_calls` on unclosed
   and closed `<tool_call>` tags and on nested JSON, `screen_output` on `call x_y` runs, `quarantine` on runs of
   `<`. Linear means flat microseconds per repeat (the unclosed tags and the runs of `<` were quadratic).

The garbage collector is off while timing, as in `timeit`.
"""

import ast, gc, statistics, sys, time
from boopiter_ext.tools.guards import MAX_CHARS, MAX_LINES, check_call, plan_calls
from boopiter_ext.tools.blocks import python_blocks
from boopiter_ext.tools.screening import quarantine, screen_output
from boopiter_ext.tools.lenient import recover_calls


def add_numbers(a:int, b:int=0)->int: return a + b
TOOLS = dict(add_numbers=add_numbers)


def block(n): return ''.join(f'add_numbers({i}, b={i})\n' for i in range(n))


def timed(f, runs):
    ts = []
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        finally: gc.enable()
    return statistics.median(ts)


def plan_and_check(code):
    calls, problem = plan_calls(code, {}, max_lines=None, max_chars=None)
    assert problem is None, problem
    return [check_call(c, TOOLS, 'add') for c in calls]


def growth(runs):
    print(f'1. plan_calls + check_call per block (limits lifted), median of {runs}:')
    print(f'   {"lines":>7} {"parse ms":>9} {"guards ms":>10} {"us/line":>8} {"x parse":>8}')
    base = None
    for n in (500, 2000, 10000):
        code = block(n)
        t_parse, t_guard = timed(lambda: ast.parse(code), runs), timed(lambda: plan_and_check(code), runs)
        base = base or t_guard / n
        print(f'   {n:>7,} {t_parse*1e3:9.1f} {t_guard*1e3:10.1f} {t_guard/n*1e6:8.1f} {t_guard/t_parse:8.1f}'
              f'   per line {t_guard/n/base:.2f}x the 500-line block')


def refusals(runs):
    for label, code in (('10,000 lines', block(10000)), ('10 MB on one line', 'f(' + '1,' * 5_000_000 + ')')):
        t = timed(lambda: plan_calls(code), runs)
        _, problem = plan_calls(code)
        assert problem.startswith('the block is too long')
        print(f'2. refusing a block of {label} (limits {MAX_LINES:,} lines, {MAX_CHARS:,} characters): '
              f'{t*1e6:.0f} us, median of {runs}')
    print(f'   the model reads: {problem}')


CALL = '{"name": "f", "arguments": {}}'
ADVERSARIAL = {
    'python_blocks, fences': lambda n: python_blocks('```python\nf()\n```\n' * n),
    'recover_calls, unclosed <tool_call>': lambda n: recover_calls('<tool_call>' * n, ['f']),
    'recover_calls, closed <tool_call>': lambda n: recover_calls(f'<tool_call>{CALL}</tool_call>' * n, ['f']),
    'recover_calls, nested JSON': lambda n: recover_calls(CALL.replace('{}', '{"a": ' + '[' * n + ']' * n + '}'), ['f']),
    'screen_output, `call x_y` runs': lambda n: screen_output('call x_y ' * n, ['create_ticket']),
    "quarantine, runs of '<'": lambda n: quarantine('<' * n * 10, ['x']),
}


def adversarial(runs):
    sizes = (2000, 8000, 32000)
    print(f'3. adversarial replies, median of {runs}: microseconds per repeat at {", ".join(f"{n:,}" for n in sizes)}')
    for label, f in ADVERSARIAL.items():
        print(f'   {label:38s}' + ''.join(f'{timed(lambda: f(n), runs) / n * 1e6:9.2f}' for n in sizes))


def main(runs=5):
    growth(int(runs))
    refusals(int(runs))
    adversarial(int(runs))


if __name__ == '__main__': main(*sys.argv[1:])
