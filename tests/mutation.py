"""Mutation testing of boopiter_ext's core modules, against the fast tests of each: do the tests notice a wrong line?

    .venv/bin/python tests/mutation.py                                          # every module below, 8 minutes each at most
    .venv/bin/python tests/mutation.py tools.guards render.reply --budget 900   # some, longer
    .venv/bin/python tests/mutation.py tools.guards --sample 80 --seed 1        # a random sample of 80 mutants
    .venv/bin/python tests/mutation.py tools.guards -v --json out.json          # each mutant as it ends; the results as JSON
    .venv/bin/python tests/mutation.py guards --pool --sample 40 --seed 2 --jobs 1   # one sample of 40 over guards' 4 modules

Modules are named by their dotted path in the package (`tools.guards`, `context.build`); a module's own name will do
when only one has it (`screening`), and the names from before the package had subpackages still work: `guards`
(blocks, guards, screening and lenient in tools/), `tools` (registry, files, kernel), `render`, `context`, `binding`,
`replay`, `stream`. With `--pool`, the modules one name stands for share one sample of `--sample` mutants (drawn from
all of theirs), and the report adds their score together.

A mutant is the module with one small change inside a function: an operator swapped (`<` for `<=`, `and` for `or`,
`+` for `-`, `in` for `not in`), a number moved by one, `True` for `False`, a `not` dropped, a `return` of `None`,
`break` for `continue`. Strings are left alone (a changed message is rarely a bug a test should pin) and so is code
outside functions. Each mutant runs in a forked copy of one process that has already imported the libraries: the
function's `__code__` is swapped for the mutated one, so every name the tests imported sees the change, and the module's
top level runs again (its tables, updated in place, hold what a mutated factory makes at import); then pytest
runs the module's tests (not `slow`, not the timing ones) with `-x`. A failing test kills the mutant; a run longer than
three times the clean run kills it too (an endless loop); a mutant every test passes survives. The score is killed /
(killed + survived). Without `--sample`, mutants run in a shuffled order until the time budget ends; the report says
how many ran of how many there are. Two at a time by default (`--jobs`). No third-party tool needed: the mutants are
made from the module's AST here, and the survivors are printed with their line so each can be killed or explained.
"""

import argparse, ast, importlib, json, os, random, signal, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAST = ['-m', 'not slow', '-k', 'not linear and not proportion and not 100_000 and not quadratic and not hostile and not '
        'costs_the_same and not lisette']   # timing tests measure rates, not results; lisette's import costs 4 s
_GUARDS = ['test_guards.py', 'test_screening.py', 'test_toolloop_core.py', 'test_properties_calls.py']
_TOOLS = ['test_tools.py', 'test_refs.py', 'test_screening.py']
TESTS = {   # the fast tests that exercise each module (files that import it and start no kernel; no timing ones)
    'tools.blocks': _GUARDS, 'tools.guards': _GUARDS, 'tools.screening': _GUARDS, 'tools.lenient': _GUARDS,
    'render.reply': ['test_render.py', 'test_stream.py', 'test_replay.py', 'test_toolloop_core.py', 'test_context.py',
                     'test_sanitize.py'],
    'settings': ['test_settings.py', 'test_properties_files.py', 'test_boundaries.py', 'test_binding.py',
                 'test_endpoints.py'],
    'core.binding': ['test_binding.py', 'test_properties_files.py', 'test_boundaries.py', 'test_catalog.py'],
    'models.stream': ['test_stream.py', 'test_render.py', 'test_replay.py', 'test_properties_calls.py', 'test_stalls.py'],
    'core.replay': ['test_replay.py', 'test_properties_files.py', 'test_boundaries.py'],
    'context.build': ['test_context.py', 'test_images.py', 'test_screening.py', 'test_hidden.py', 'test_stale.py'],
    'tools.registry': _TOOLS, 'tools.files': _TOOLS, 'tools.kernel': _TOOLS,
    'tools.notebook': ['test_notebook_tools.py', 'test_hidden.py'],
    'core.refs': ['test_refs.py', 'test_secrets.py', 'test_hidden.py', 'test_context.py'],
}
OLD_NAMES = dict(   # the modules before the package had subpackages: guards.py and tools.py are split since
    guards=['tools.blocks', 'tools.guards', 'tools.screening', 'tools.lenient'], tools=['tools.registry', 'tools.files',
    'tools.kernel'], render=['render.reply'], context=['context.build'], binding=['core.binding'],
    replay=['core.replay'], stream=['models.stream'])


def module_names(names)->list:
    "The dotted names `names` stand for: each as it is, an old name's modules, or the one module of that own name."
    out = []
    for n in names:
        own = [k for k in TESTS if k.rpartition('.')[2] == n]
        found = [n] if n in TESTS else OLD_NAMES.get(n) or (own if len(own) == 1 else None)
        if not found: raise SystemExit(f'{n}: no such module here; pick from {", ".join(TESTS)}')
        out += [m for m in found if m not in out]
    return out
SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
        ast.Mod: ast.FloorDiv, ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.BitOr: ast.BitAnd,
        ast.BitAnd: ast.BitOr, ast.Pow: ast.Mult,
        ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
        ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.And: ast.Or, ast.Or: ast.And}


# ---- making mutants

def _functions(tree):
    "(qualname, node) of every function at module or class level (methods included), in source order."
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)): yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)): yield f'{node.name}.{sub.name}', sub


def _is_docstring(node, parent):
    return (isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and parent.body
            and isinstance(parent.body[0], ast.Expr) and parent.body[0].value is node)


def _mutations(node):
    "The (kind, description) mutations that apply to one node."
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in SWAP:
        yield 'op', f'{type(node.op).__name__} -> {SWAP[type(node.op)].__name__}'
    elif isinstance(node, ast.BoolOp): yield 'op', f'{type(node.op).__name__} -> {SWAP[type(node.op)].__name__}'
    elif isinstance(node, ast.Compare):
        for i,op in enumerate(node.ops):
            if type(op) in SWAP: yield f'cmp{i}', f'{type(op).__name__} -> {SWAP[type(op)].__name__}'
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)): yield 'unary', f'drop {type(node.op).__name__}'
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float) and not isinstance(node.value, bool):
        yield 'num', f'{node.value!r} -> {node.value + 1!r}'
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool): yield 'bool', f'{node.value} -> {not node.value}'
    elif isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant)
                                                                          and node.value.value is None):
        yield 'return', 'return None'
    elif isinstance(node, ast.Break): yield 'loop', 'break -> continue'
    elif isinstance(node, ast.Continue): yield 'loop', 'continue -> break'


def _apply(node, kind):
    "Change `node` in place by mutation `kind`; returns the node to put in its place."
    if kind == 'op': node.op = SWAP[type(node.op)](); return node
    if kind.startswith('cmp'): i = int(kind[3:]); node.ops[i] = SWAP[type(node.ops[i])](); return node
    if kind == 'unary': return node.operand
    if kind == 'num': node.value = node.value + 1; return node
    if kind == 'bool': node.value = not node.value; return node
    if kind == 'return': node.value = ast.Constant(None); return node
    if kind == 'loop': return ast.Continue() if isinstance(node, ast.Break) else ast.Break()


def _indexed(fn):
    "Every (index, node, parent) under function `fn`, in one fixed order (docstrings, annotations and defaults skipped)."
    out = []
    def walk(node, parent):
        for field, value in ast.iter_fields(node):
            if field in ('returns', 'annotation', 'decorator_list', 'type_comment'): continue
            if isinstance(node, ast.arguments): continue          # defaults are evaluated at definition, not per call
            for child in value if isinstance(value, list) else [value]:
                if not isinstance(child, ast.AST): continue
                if isinstance(child, ast.Expr) and _is_docstring(child.value, node): continue
                if isinstance(child, ast.JoinedStr): continue    # f-strings: messages
                out.append((len(out), child, node))
                walk(child, node)
    walk(fn, None)
    return out


def mutants(source):
    "Every mutant of `source` as a dict: function qualname, node index, kind, line and description."
    tree = ast.parse(source)
    found = []
    for qual, fn in _functions(tree):
        for i, node, _ in _indexed(fn):
            for kind, desc in _mutations(node):
                found.append(dict(func=qual, index=i, kind=kind, line=node.lineno, desc=desc))
    return found


def mutated_code(source, path, m):
    "(code of `m['func']`, code of the whole module) with mutation `m` applied."
    tree = ast.parse(source)
    fn = dict(_functions(tree))[m['func']]
    _, node, parent = _indexed(fn)[m['index']]
    new = _apply(node, m['kind'])
    if new is not node:
        for field, value in ast.iter_fields(parent):
            if isinstance(value, list): parent.__dict__[field] = [new if v is node else v for v in value]
            elif value is node: setattr(parent, field, new)
    ast.fix_missing_locations(tree)
    code = compile(tree, str(path), 'exec')
    want = m['func']
    def find(co):
        for c in co.co_consts:
            if isinstance(c, type(co)):
                if c.co_qualname == want: return c
                if (hit := find(c)) is not None: return hit
    return find(code), code


def _merge(module, code):
    """Run the mutated module's top level again, for what it builds with the mutated function (a table of rules made
    by a factory at import): tables are updated in place, so every module that imported them sees the change; functions
    and classes defined by name keep their objects (the mutated function's code is swapped in separately)."""
    ns = dict(__name__=module.__name__, __package__=module.__package__, __file__=module.__file__,
              __builtins__=module.__builtins__)
    exec(code, ns)
    for k, new in ns.items():
        old = vars(module).get(k, new)
        if old is new or k.startswith('__'): continue
        if isinstance(old, type) or getattr(old, '__qualname__', None) == k: continue   # a def or a class: kept
        if type(old) is dict and type(new) is dict: old.clear(); old.update(new)
        elif type(old) is list and type(new) is list: old[:] = new
        else: setattr(module, k, new)


def live_function(module, qual):
    "The function object behind `qual` in the imported module (through properties, caches and wrappers), or None."
    obj = module
    for part in qual.split('.'):
        obj = vars(obj).get(part) if hasattr(obj, '__dict__') else None
        if obj is None: return None
    if isinstance(obj, property): obj = obj.fget
    if isinstance(obj, (staticmethod, classmethod)): obj = obj.__func__
    while getattr(getattr(obj, '__code__', None), 'co_qualname', None) != qual and hasattr(obj, '__wrapped__'):
        obj = obj.__wrapped__
    return obj if getattr(getattr(obj, '__code__', None), 'co_qualname', None) == qual else None   # not a wrapper's


# ---- running them

def run_tests(module, tests, patch=None):
    "Fork; in the child swap in `patch` = (function, code) and run pytest quietly. Returns (pid, read end of a pipe)."
    r, w = os.pipe()
    pid = os.fork()
    if pid: os.close(w); return pid, r
    os.close(r)
    try:
        if patch:
            patch[0].__code__ = patch[1]
            _merge(module, patch[2])
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1); os.dup2(devnull, 2)
        import pytest
        code = pytest.main([*tests, '-x', '-q', '-p', 'no:cacheprovider', *FAST])
    except BaseException:
        import traceback
        Path(tempfile.gettempdir(), f'mutation-error-{os.getpid()}.txt').write_text(traceback.format_exc())   # why
        code = 99
    os.write(w, str(int(code)).encode())
    os._exit(0)


def wait(pid, r, timeout):
    "The child's pytest exit code, or 'timeout' (then it is killed)."
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            out = os.read(r, 16).decode(); os.close(r)
            return int(out) if out else 98
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0); os.close(r)
    return 'timeout'


def module_source(name)->str: return Path(importlib.import_module(f'boopiter_ext.{name}').__file__).read_text()


def pooled(names, sample, seed)->dict:
    "module -> its part of one sample of `sample` mutants drawn from all the mutants of `names` together."
    every = [(n, m) for n in names for m in mutants(module_source(n))]
    chosen = random.Random(seed).sample(every, min(sample, len(every)))
    return {n: [m for k, m in chosen if k == n] for n in names}


def mutate_module(name, budget, sample, seed, jobs, log, todo=None):
    module = importlib.import_module(f'boopiter_ext.{name}')
    path = Path(module.__file__)
    source = path.read_text()
    tests = [str(ROOT/'tests'/t) for t in TESTS[name]]
    every = mutants(source)
    if todo is None:
        todo = random.Random(seed).sample(every, min(sample, len(every))) if sample else random.Random(seed).sample(every, len(every))
    if not todo: return dict(module=name, mutants=len(every), ran=0, killed=0, survived=[], skipped=0, errors=[],
                             clean_run_s=0, score=0.0, seconds=0)
    t = time.monotonic()
    base = wait(*run_tests(module, tests), timeout=600)
    clean = time.monotonic() - t
    if base != 0: raise SystemExit(f'{name}: the tests fail without any mutant (pytest exit {base})')
    results, running, start = [], {}, time.monotonic()
    pending = list(todo)
    while pending or running:
        while pending and len(running) < jobs and time.monotonic() - start < budget:
            m = pending.pop(0)
            fn = live_function(module, m['func'])
            code, whole = mutated_code(source, path, m) if fn is not None else (None, None)
            if code is None or len(code.co_freevars) != len(fn.__code__.co_freevars):
                results.append(dict(m, result='skipped')); continue
            running[run_tests(module, tests, (fn, code, whole))] = (m, time.monotonic())
        if not pending or time.monotonic() - start >= budget: pending = []
        for (pid, r), (m, began) in list(running.items()):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done or time.monotonic() - began > 3 * clean + 10:
                if done:
                    out = os.read(r, 16).decode(); os.close(r)
                    code = int(out) if out else 98
                else:
                    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0); os.close(r); code = 'timeout'
                result = ('survived' if code == 0 else 'killed' if code in (1, 'timeout') else f'error {code}')
                results.append(dict(m, result=result, seconds=round(time.monotonic() - began, 1)))
                del running[(pid, r)]
                log(f'  {name}:{m["line"]} {m["func"]} {m["desc"]}: {result}')
        time.sleep(0.02)
    killed = sum(r['result'] == 'killed' for r in results)
    survived = [r for r in results if r['result'] == 'survived']
    return dict(module=name, mutants=len(every), ran=killed + len(survived), killed=killed, survived=survived,
                skipped=sum(r['result'] == 'skipped' for r in results),
                errors=[r for r in results if r['result'].startswith('error')], clean_run_s=round(clean, 1),
                score=killed / max(1, killed + len(survived)), seconds=round(time.monotonic() - start))


def show(m, source):
    lines = source.splitlines()
    return f'{m["line"]:>5}  {m["func"]}: {m["desc"]}\n       {lines[m["line"] - 1].strip()}'


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('modules', nargs='*', default=list(TESTS), help=f'modules to mutate (default: {" ".join(TESTS)})')
    p.add_argument('--budget', type=float, default=480, help='seconds per module (default 480)')
    p.add_argument('--sample', type=int, default=0, help='mutants per module, drawn at random (default: all, budget allowing)')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--jobs', type=int, default=2)
    p.add_argument('--pool', action='store_true', help='the modules one name stands for share one sample (with --sample)')
    p.add_argument('--json', type=Path, help='write the results here')
    p.add_argument('-v', '--verbose', action='store_true', help='print each mutant as it ends')
    args = p.parse_args(argv)
    sys.path[:0] = [str(ROOT/'tests')]
    os.chdir(ROOT)
    import pytest, IPython, jupyter_client.manager, requests, nbformat, PIL.Image, markdown_it  # noqa: F401  (once, before the forks)
    log = print if args.verbose else (lambda s: None)
    report = []
    for arg in args.modules:
        names = [n for n in module_names([arg]) if n not in [r['module'] for r in report]]
        todo = pooled(names, args.sample, args.seed) if args.pool and args.sample and len(names) > 1 else {}
        group = []
        for name in names:
            res = mutate_module(name, args.budget, args.sample, args.seed, args.jobs, log, todo.get(name))
            report.append(res); group.append(res)
            source = module_source(name)
            print(f'{name:15} {res["score"]:6.1%} killed  ({res["killed"]} of {res["ran"]} run; {res["mutants"]} mutants in all, '
                  f'{res["skipped"]} not applicable; {len(res["errors"])} errors; {res["seconds"]} s; clean run {res["clean_run_s"]} s)',
                  flush=True)
            for m in sorted(res['survived'], key=lambda m: m['line']): print(show(m, source), flush=True)
        if todo:
            killed, ran = sum(r['killed'] for r in group), sum(r['ran'] for r in group)
            print(f'{arg:15} {killed / max(1, ran):6.1%} killed  ({killed} of {ran} run, pooled over {", ".join(names)})', flush=True)
    if args.json: args.json.write_text(json.dumps(report, indent=1))


if __name__ == '__main__': main()
