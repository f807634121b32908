"""The package's layers point one way: a module imports only from its own package or from a lower layer, only the faces
import IPython, widgets or comms, and no module imports another that (directly or not) imports it back. Lazy imports
inside functions count, and relative imports of any level are resolved to full dotted names.

    redact < errors < settings < context < models < render < tools < core < faces < the package's __init__ (its table of contents)
"""

import ast
from pathlib import Path
import boopiter_ext

PKG = Path(boopiter_ext.__file__).parent
NAME = PKG.name
ORDER = ['redact', 'errors', 'settings', 'context', 'models', 'render', 'tools', 'core', 'faces', '__init__']   # lowest first
FACES = 'faces'
FACE_ONLY = ('IPython', 'ipywidgets', 'ipykernel', 'comm', 'traitlets')


def dotted(path:Path)->str:
    "`boopiter_ext.tools.files` for tools/files.py; a package's `__init__.py` is the package itself."
    parts = path.relative_to(PKG.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


FILES = {dotted(p): p for p in sorted(PKG.rglob('*.py')) if 'labextension' not in p.parts}
MODULES = set(FILES)


def unit(mod:str)->str:
    "The layer a module belongs to: its subpackage, or the top-level module itself (`__init__` for the package)."
    parts = mod.split('.')
    return parts[1] if len(parts) > 1 else '__init__'


def _base(mod:str, level:int)->str:
    "The package a relative import of `level` dots in `mod` starts from."
    pkg = mod if FILES[mod].name == '__init__.py' else mod.rpartition('.')[0]
    return '.'.join(pkg.split('.')[:len(pkg.split('.')) - (level - 1)])


def imports(mod:str, source:str=None)->tuple:
    "(the package's modules `mod` imports, the top-level packages it imports from outside), lazy imports included."
    own, outside = set(), set()
    for node in ast.walk(ast.parse(source if source is not None else FILES[mod].read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split('.')[0] == NAME: own.add(a.name)
                else: outside.add(a.name.split('.')[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level: target = '.'.join(filter(None, [_base(mod, node.level), node.module]))
            elif node.module.split('.')[0] == NAME: target = node.module
            else:
                outside.add(node.module.split('.')[0])
                continue
            own.update(f'{target}.{a.name}' if f'{target}.{a.name}' in MODULES else target for a in node.names)
    return own, outside


GRAPH = {m: imports(m) for m in MODULES}


def upward(graph=GRAPH)->list:
    "Every import edge that goes neither to the same package nor to a lower layer (or leaves the known layers)."
    rank = {u: i for i,u in enumerate(ORDER)}
    return sorted((m, t) for m,(own, _) in graph.items() for t in own
                  if t not in MODULES or unit(t) not in rank or unit(m) not in rank
                  or unit(t) != unit(m) and rank[unit(t)] >= rank[unit(m)])


def face_imports(graph=GRAPH)->dict:
    "IPython, widget, kernel, comm or traitlets imports outside faces/ and the package's `__init__`."
    return {m: sorted(outside & set(FACE_ONLY)) for m,(_, outside) in graph.items()
            if unit(m) not in (FACES, '__init__') and outside & set(FACE_ONLY)}


def cycles(graph=GRAPH)->list:
    "An import cycle through each module that is on one."
    def cycle_from(start):
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, (set(),))[0]):
                if nxt == start: return path + [nxt]
                if nxt not in path and nxt in graph: stack.append((nxt, path + [nxt]))
        return None
    return [c for m in sorted(graph) if (c := cycle_from(m))]


def layout()->str:
    readme = (PKG.parent/'README.md').read_text()
    return readme[readme.index('## Layout'):].split('\n## ')[0]


def missing_from_layout(text:str)->list:
    "Modules (as `tools/files.py`) and subpackages (as `tools/`) the README's Layout section does not name."
    subpackages = {unit(m) + '/' for m in MODULES if FILES[m].name == '__init__.py' and m != NAME}
    files = {FILES[m].relative_to(PKG).as_posix() for m in MODULES if m == NAME or FILES[m].name != '__init__.py'}
    return sorted(f for f in subpackages | files if f'`{f}`' not in text)


def test_every_module_belongs_to_a_layer():
    assert sorted({unit(m) for m in MODULES} - set(ORDER)) == []


def test_imports_go_to_the_same_package_or_a_lower_layer():
    assert upward() == []


def test_only_the_faces_import_ipython_widgets_or_comms():
    assert face_imports() == {}


def test_no_import_cycles():
    assert cycles() == []


def test_every_module_is_in_the_readme_layout():
    assert missing_from_layout(layout()) == []


def test_subpackage_inits_import_nothing_and_list_their_modules():
    "`%load_ext` stays instant: a subpackage's `__init__` is a docstring naming each of its modules, nothing more."
    for m in MODULES - {NAME}:
        if FILES[m].name != '__init__.py': continue
        tree = ast.parse(FILES[m].read_text())
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))], m
        doc = ast.get_docstring(tree) or ''
        assert [p.name for p in FILES[m].parent.glob('*.py') if p.name != '__init__.py' and p.name not in doc] == [], m


# ---- each check can fail: a violation planted in a copy of the graph (or of the README) is found

def _planted(mod, source):
    return dict(GRAPH, **{mod: imports(mod, source)})


def test_the_checks_find_planted_violations():
    lazy_up = 'def f():\n    from ..core.assistant import Assistant\n'   # lazy, two dots: context (1) importing core (5)
    found = upward(_planted('boopiter_ext.context.build', lazy_up))
    assert ('boopiter_ext.context.build', 'boopiter_ext.core.assistant') in found
    assert ('boopiter_ext.errors', 'boopiter_ext.settings') in upward(_planted('boopiter_ext.errors', 'from . import settings'))
    sideways = 'from ..models import deaddrop as dd'   # render and models: models is lower, so this one is fine
    assert upward(_planted('boopiter_ext.render.reply', sideways)) == []
    assert face_imports(_planted('boopiter_ext.tools.loop', 'def f():\n    import IPython.display\n')) == \
        {'boopiter_ext.tools.loop': ['IPython']}
    assert cycles(_planted('boopiter_ext.context.images', 'from .build import Cell'))   # build imports images
    assert missing_from_layout(layout().replace('`tools/files.py`', 'files')) == ['tools/files.py']
    assert missing_from_layout(layout().replace('`context/`', 'context')) == ['context/']
