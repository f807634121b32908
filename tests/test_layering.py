"""One core, thin faces: the core modules know nothing of IPython, widgets or the frontend, and no module imports
another that (directly or not) imports it back — lazy imports inside functions included."""

import ast
from pathlib import Path
import boopiter_ext

PKG = Path(boopiter_ext.__file__).parent
FACES = {'magics', 'toolbar', 'code_actions', 'capture', 'channel', 'view', 'run', '__init__'}
FACE_ONLY = ('IPython', 'ipywidgets', 'ipykernel', 'comm', 'traitlets')


def imports(path:Path)->tuple:
    "(the package's modules `path` imports, the top-level packages it imports from outside), lazy imports included."
    own, outside = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level: own.update([node.module.split('.')[0]] if node.module else [a.name for a in node.names])
            elif node.module: outside.add(node.module.split('.')[0])
        elif isinstance(node, ast.Import): outside.update(a.name.split('.')[0] for a in node.names)
    return own, outside


GRAPH = {p.stem: imports(p) for p in PKG.glob('*.py')}


def test_the_core_imports_no_ipython_widgets_or_comms():
    core = {m: outside & set(FACE_ONLY) for m,(_, outside) in GRAPH.items() if m not in FACES}
    assert {m: found for m,found in core.items() if found} == {}
    assert {m for m,(own, _) in GRAPH.items() if m not in FACES and own & FACES} == set()   # no face behind the core


def test_no_import_circles():
    def cycle_from(start):
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(GRAPH.get(node, (set(),))[0]):
                if nxt == start: return path + [nxt]
                if nxt not in path and nxt in GRAPH: stack.append((nxt, path + [nxt]))
        return None
    assert [c for m in GRAPH if (c := cycle_from(m))] == []


def test_every_module_is_in_the_readme_layout():
    readme = (PKG.parent/'README.md').read_text()
    layout = readme[readme.index('## Layout'):]
    assert [m for m in sorted(GRAPH) if m != '__init__' and f'`{m}.py`' not in layout] == []
