"""Tools the model calls by writing Python: plain functions in the kernel, described as Python signatures.

Tools are never passed as a chat API's native `tools=`: Ollama/Qwen chat templates turn that into a
`<tools>` block that makes local models call a tool on every prompt. Instead the functions are pushed
into the kernel's namespace and `tools_system_prompt` shows them as Python `def` lines with their
docments; the model uses one by writing a ```python block that calls it.

Tools come from *sources* (`SOURCES`: name -> (factory, on by default, description)); a factory gets a
`ToolContext` (the notebook's folder, the kernel namespace, the recorded cells) and returns functions.
`get_tool_list(selection, ctx)` assembles the selected sources plus the notebook's own `add_tool`
functions. Names in `NEVER_OFFERED` (remote or arbitrary command execution) are dropped whatever a
source contributes or the selection says. The built-in sources only read: `files` stays inside the
notebook's folder (symlinks are followed before checking) and stops at its cap or after `_MAX_SECONDS`, saying
where, so a folder of 100,000 files never holds the kernel; `kernel` lists variables and shows cells.
A tool that changes something is marked with `@side_effect(intent)`; guards.py runs it only when
the user's own prompt matches `intent`. Tools answer in text, and problems come back as `error: ...`.

    ctx = ToolContext(Path('.'), ip.user_ns, recorder.cells)
    tools = get_tool_list({'files': True, 'kernel': False}, ctx)
    system = tools_system_prompt(tools)     # '' when there are no tools: then no system prompt is added
"""

__all__ = ['SOURCES', 'DEFAULT_SELECTION', 'NEVER_OFFERED', 'ToolContext', 'register_tool_source', 'get_tool_list',
           'add_tool', 'remove_tool', 'notebook_tools', 'side_effect', 'tool_signature', 'tools_system_prompt',
           'file_tools', 'kernel_tools', 'parse_selection', 'selection_setting', 'user_variables', 'is_tool',
           'unofferable']

import builtins, fnmatch, inspect, keyword, logging, os, re, reprlib, stat, time, types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from .context import cell_text, prompt_text, reply_text
from .guards import INTENT_ATTR
from .paths import confine

log = logging.getLogger(__name__)

NEVER_OFFERED = frozenset({'run_cmd', 'remote_launch', 'remote_status', 'remote_smoke_test', 'exec', 'eval', 'system',
                           'shell', 'bash', 'sh', 'subprocess_run', 'run_shell', 'os_system', 'popen'})
_SKIP_DIRS = {'__pycache__', 'node_modules', '.git', '.venv'}
_NEVER_MODULES = {'subprocess', 'pty', 'os', 'posix', 'nt', 'shutil', 'builtins'}   # callables from these are never tools
_KERNEL_NAMES = {'In', 'Out', 'exit', 'quit', 'get_ipython'}
_MAX_BYTES = 1_000_000    # read_file refuses, and search_files skips, bigger files
_MAX_LIST, _MAX_MATCHES, _MAX_VARS = 300, 200, 200
_MAX_SECONDS = 2.0   # list_files and search_files stop here and say where: a huge folder never holds the kernel


def side_effect(
    intent:str,  # Regex the user's own prompt must match before the tool may run (checked in guards.py)
):
    "Decorator marking a tool that changes something; guards.py runs it only when the user's prompt matches `intent`."
    re.compile(intent)   # a bad pattern is a programming error: fail where the tool is defined
    def deco(fn):
        setattr(fn, INTENT_ATTR, intent)
        return fn
    return deco


def _mark(fn):
    "Mark `fn` as a tool (list_variables skips tools); some callables, like bound methods, take no attributes."
    try: fn.boopiter_tool = True
    except (AttributeError, TypeError): pass
    return fn


@dataclass
class ToolContext:
    "What a tool source may use: the notebook's folder, the kernel's namespace, its cells, and the frontend's edits."
    root: Path                                       # The notebook's folder: file tools stay inside it
    namespace: dict = field(default_factory=dict)    # The kernel's user namespace
    cells: Callable = lambda: []                     # Zero-argument callable: the recorded `Cell`s in notebook order
    notebook: Callable = lambda: []                  # Zero-argument callable: every cell of the notebook, in order
    edit: Callable = None                            # edit(request) -> (ok, message), through the frontend; or None
    settings: dict = field(default_factory=dict)     # The resolved settings: a source reads its own keys (`web_allow`)
    def __post_init__(self): self.root = Path(self.root)


# ---- file tools: read-only, confined to the notebook's folder

def _hidden(name): return name.startswith('.') or name in _SKIP_DIRS


def _entries(d):
    "The entries of folder `d` sorted by name; none if it cannot be read (or is no folder)."
    try:
        with os.scandir(d) as it: return sorted(it, key=lambda e: e.name)
    except OSError: return []


def _walk(root, top, deadline):
    """(relative path, path, is_dir) for each entry under `top` a tool may show, depth first and sorted in each folder:
    no hidden or bulky folders, nothing leaving `root`. Past `deadline` it yields (the folder it was in, None, None).
    Paths are strings: a `Path` per entry would cost more than the rest of the walk."""
    stack = [('' if top == root else _rel(root, top) + '/', iter(_entries(top)))]
    while stack:
        rel, it = stack[-1]
        if (e := next(it, None)) is None:
            stack.pop()
            continue
        if time.monotonic() > deadline:
            yield rel or './', None, None
            return
        if _hidden(e.name): continue
        try: link, is_dir = e.is_symlink(), e.is_dir()
        except OSError: continue
        # only a link can lead out of `root` or to a dot-file: other entries of a confined folder stay inside it
        if link and isinstance(confine(root, e.path), str): continue
        yield rel + e.name, e.path, is_dir
        if is_dir and not link: stack.append((rel + e.name + '/', iter(_entries(e.path))))   # a linked folder: listed


def _text(p):
    "The text of `p` if it is a regular file under 1 MB and not binary, else None; a FIFO or device is never opened."
    try:
        if not stat.S_ISREG(os.stat(p).st_mode): return None
        with open(os.open(p, os.O_RDONLY | os.O_NONBLOCK), 'rb') as f:   # swapped for a FIFO since: still no wait
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_BYTES: return None
            data = f.read(st.st_size + 1)   # not `_MAX_BYTES`: read(n) allocates n bytes first
    except OSError: return None
    return None if len(data) > _MAX_BYTES or b'\0' in data[:8192] else data.decode('utf-8', 'replace')


def _is_binary(p):
    with open(p, 'rb') as f: return b'\0' in f.read(8192)


def _matcher(pattern):
    "A test for names matching shell-style `pattern`, compiled once rather than per name; None if it is not a string."
    return re.compile(fnmatch.translate(pattern)).match if isinstance(pattern, str) else None


def _stopped(where, what): return f'... stopped after {_MAX_SECONDS:g} s, in {where}; narrow {what}'


def _rel(root, p): return p.relative_to(root).as_posix()


def file_tools(
    root:Path,  # The notebook's folder: every path the tools take is resolved and must stay inside it
)->list:        # [list_files, read_file, search_files]
    "Read-only file tools confined to `root`."
    root = Path(root).resolve()

    def list_files(
        path:str='.',     # Folder, relative to the notebook's folder
        pattern:str='*',  # Shell-style pattern the names must match, e.g. '*.py'
    )->str:               # One path per line, relative to the notebook's folder; folders end with '/'
        "List files and folders under `path`, recursively (hidden and cache folders are skipped)"
        top, match = confine(root, path), _matcher(pattern)
        if isinstance(top, str): return top
        if match is None: return f'error: pattern must be a string, not {type(pattern).__name__}'
        if not top.exists(): return f'error: no such folder: {path}'
        if not top.is_dir(): return f'error: {path} is a file; read_file reads it'
        found = []
        for rel, p, is_dir in _walk(root, top, time.monotonic() + _MAX_SECONDS):
            if p is None: return '\n'.join(found + [_stopped(rel, '`path` or `pattern`')])
            if not match(os.path.basename(p)): continue
            if len(found) == _MAX_LIST:   # one more exists: stop here rather than walk on to count the rest
                return '\n'.join(found + [f'... stopped at {_MAX_LIST} entries; narrow `path` or `pattern`'])
            found.append(rel + ('/' if is_dir else ''))
        return '\n'.join(found) or f'(nothing under {path} matches {pattern!r})'

    def read_file(
        path:str,           # File, relative to the notebook's folder
        start_line:int=1,   # First line to show (1-based)
        end_line:int=None,  # Last line to show; None: to the end
    )->str:                 # The lines, each prefixed with its number
        "Read a text file, with line numbers"
        from fastcore.tools import view_file
        p = confine(root, path)
        if isinstance(p, str): return p
        if not p.exists(): return f'error: no such file: {path}'
        if p.is_dir(): return f'error: {path} is a folder; list_files lists it'
        if not p.is_file(): return f'error: {path} is not a regular file'
        try:
            start, end = int(start_line), None if end_line is None else int(end_line)
            if p.stat().st_size > _MAX_BYTES: return f'error: {path} is over 1 MB, too big to read here'
            if _is_binary(p): return f'error: {path} is a binary file'
            return str(view_file(str(p), start, end, nums=True)) or '(empty file)'
        except (TypeError, ValueError) as e: return f'error: {e}'
        except OSError as e: return f'error: cannot read {path}: {e.strerror or e}'

    def search_files(
        text:str,       # Text to look for (any case; plain text, not a regular expression)
        path:str='.',   # File or folder to search, relative to the notebook's folder
        glob:str='*',   # Shell-style pattern the file names must match, e.g. '*.py'
    )->str:             # One `path:line: text` line per match
        "Search text files for lines containing `text`"
        # plain text on purpose: a regular expression chosen by the model could backtrack for ever, beyond interrupts
        if not isinstance(text, str) or not text: return 'error: give the text to look for'
        want = text.lower()
        top, match = confine(root, path), _matcher(glob)
        if isinstance(top, str): return top
        if match is None: return f'error: glob must be a string, not {type(glob).__name__}'
        if not top.exists(): return f'error: no such file or folder: {path}'
        one = top.is_file() and [(_rel(root, top), str(top), False)]
        files = one or _walk(root, top, time.monotonic() + _MAX_SECONDS)
        out = []
        for rel, p, is_dir in files:
            if p is None: return '\n'.join(out + [_stopped(rel, '`path` or `glob`')])
            if is_dir or not (one or match(os.path.basename(p))) or (content := _text(p)) is None: continue
            if want not in content.lower(): continue   # most files: one search in C, no loop over their lines
            for i,line in enumerate(content.splitlines(), 1):
                if want not in line.lower(): continue
                if len(out) == _MAX_MATCHES: return '\n'.join(out + [f'... stopped at {len(out)} matches; narrow it'])
                out.append(f'{rel}:{i}: {line.strip()[:200]}')
        return '\n'.join(out) or f'(no matches for {text!r})'

    return [_mark(list_files), _mark(read_file), _mark(search_files)]


# ---- kernel tools: read-only views of the user's variables and cells

_repr = reprlib.Repr()
_repr.maxstring, _repr.maxother, _repr.maxlong, _repr.maxlist, _repr.maxdict = 80, 80, 40, 8, 6


def is_tool(v)->bool:
    "Whether `v` is a function boopiter offers as a tool (marked by `add_tool` or a source)."
    try: return getattr(v, 'boopiter_tool', False) is True
    except Exception: return False    # an object whose __getattr__ fails is a user variable, not a tool


def _describe(name, v):
    "One `name: type[, shape (…)|len N]: preview` line."
    kind = type(v).__name__
    try: shape = getattr(v, 'shape', None)
    except Exception: shape = None
    if isinstance(shape, tuple): kind += f', shape {tuple(shape)}'
    elif hasattr(type(v), '__len__') and not isinstance(v, type):
        try: kind += f', len {len(v)}'
        except Exception: pass
    try: preview = ' '.join(_repr.repr(v).split())
    except Exception as e: preview = f'<repr failed: {type(e).__name__}>'
    return f'{name}: {kind}: {preview[:77] + "..." if len(preview) > 80 else preview}'


_SECRET_NAME = re.compile(r'key|token|secret|passw|credential', re.I)


def _kernel_machinery(k, v):
    "The kernel's own callables in the namespace (ipykernel's `open` wrapper, IPython's `display`): not the user's data."
    if not callable(v): return False
    builtin = getattr(builtins, k, None)
    return builtin is not None and (v is builtin or getattr(v, '__wrapped__', None) is builtin) \
        or str(getattr(v, '__module__', '') or '').startswith(('IPython.', 'ipykernel.'))


def _user_vars(ns):
    for k,v in sorted(ns.items()):
        if k.startswith('_') or k in _KERNEL_NAMES or isinstance(v, types.ModuleType) or is_tool(v): continue
        if _kernel_machinery(k, v): continue
        yield k, v


def user_variables(
    namespace:dict,  # The kernel's user namespace
)->dict:             # The variables a model may see and pass to a tool
    "The user's own variables: no private, kernel or module names, no tools, nothing named like a secret."
    return {k: v for k,v in _user_vars(dict(namespace)) if not _SECRET_NAME.search(k)}


def _show(cell):
    if cell.kind != 'prompt': return cell_text(cell)[0]
    return f'Prompt:\n{prompt_text(cell.source)}\n\nReply:\n{reply_text(cell) or "(none recorded)"}'


def kernel_tools(
    namespace:dict,  # The kernel's user namespace
    cells:Callable,  # Zero-argument callable returning the recorded `Cell`s in notebook order
)->list:             # [list_variables, show_cell]
    "Read-only tools over the kernel's variables and recorded cells."

    def list_variables(
        pattern:str='',  # Only names containing this text (any case)
    )->str:              # One `name: type[, shape|len]: preview` line per variable
        "List the user's variables in the kernel, with their types and a short preview"
        pat = str(pattern or '').lower()
        lines = [f'{k}: {type(v).__name__}: (value hidden: named like a secret)' if _SECRET_NAME.search(k)
                 else _describe(k, v) for k,v in _user_vars(dict(namespace)) if pat in k.lower()]
        if not lines: return f'(no variables{f" matching {pattern!r}" if pat else ""})'
        more = len(lines) - _MAX_VARS
        return '\n'.join(lines[:_MAX_VARS] + ([f'... {more} more; pass a `pattern`'] if more > 0 else []))

    def show_cell(
        index:int=-1,  # Which cell: 0 is the first, -1 the last (most recent)
    )->str:            # The cell's source and its text outputs
        "Show one of the notebook's cells that ran, with its outputs"
        cs = list(cells())
        if not cs: return 'error: no cells have run yet'
        try: return _show(cs[int(index)])
        except (IndexError, TypeError, ValueError):
            return f'error: no cell {index!r}; there are {len(cs)} (0 to {len(cs)-1}, or -1 for the last)'

    return [_mark(list_variables), _mark(show_cell)]


# ---- sources, selection and the notebook's own tools

def _kernel_source(ctx): return kernel_tools(ctx.namespace, ctx.cells)
def _files_source(ctx): return file_tools(ctx.root)

def _notebook_source(ctx):
    from .nbtools import notebook_source
    return notebook_source(ctx.notebook, ctx.edit)

def _web_source(ctx):
    from .webtools import web_source   # imported when the source is used: `%load_ext` stays cheap
    return web_source(ctx)

def _pdf_source(ctx):
    from .webtools import pdf_source
    return pdf_source(ctx)

SOURCES = {  # name: (factory(ctx)->list of tools, selected by default, description for the tools menu)
    'kernel': (_kernel_source, True, "Variables and cells of this kernel (read-only)"),
    'files': (_files_source, True, "Files under the notebook's folder: list, read, search (read-only)"),
    'notebook': (_notebook_source, False, "The notebook's cells: list, read, search; add and edit them (through the "
                                          "extension, on your word, undoable)"),
    'web': (_web_source, False, "Fetch a public web page as text (GET only; private addresses need `web_allow`)"),
    'pdf': (_pdf_source, False, "Read PDFs under the notebook's folder as text (needs pypdf: `pip install pypdf`)"),
}
DEFAULT_SELECTION = {name: default for name,(_,default,_) in SOURCES.items()}
_NOTEBOOK = {}   # name: fn, the tools this process added with add_tool


def register_tool_source(
    name:str,           # Key in a selection, e.g. 'web'
    factory:Callable,   # factory(ctx:ToolContext)->list of tools; give `ctx` a default if it works without one
    default:bool=False, # Whether the source is selected unless a selection says otherwise
    description:str='', # One line for the tools menu
):
    "Add (or replace) a tool source."
    if not callable(factory): raise TypeError(f'tool source {name!r}: the factory must be callable, not {factory!r}')
    SOURCES[name] = (factory, default, description)
    DEFAULT_SELECTION[name] = default


def _needs_ctx(factory):
    "Whether `factory` must be given a context: it has a first parameter without a default."
    try: ps = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError): return True
    return bool(ps) and ps[0].default is ps[0].empty and ps[0].kind not in (ps[0].VAR_POSITIONAL, ps[0].VAR_KEYWORD)


def _named(fn):
    "A name the model can call, that shadows no Python builtin or keyword in the user's namespace."
    name = getattr(fn, '__name__', None)
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name) and not hasattr(builtins, name)
def _blocked(fn):
    "Never offered: command execution by name, or anything from the modules that run commands or touch the system."
    return _named(fn) and fn.__name__.lower() in NEVER_OFFERED or getattr(fn, '__module__', None) in _NEVER_MODULES


def unofferable(
    fn,  # Anything from the user's namespace
)->str:  # Why it can never be a tool ('' if it can be)
    "The reason `fn` is no tool: not a named function, a builtin's name, command execution, or the kernel's own."
    if not callable(fn): return f'a {type(fn).__name__}, not a function'
    if not _named(fn): return 'not a function with a name the model can call (a `def` that shadows no builtin)'
    if _blocked(fn): return 'never offered to the model (command execution, or a system module)'
    if fn.__name__ in _KERNEL_NAMES or _kernel_machinery(fn.__name__, fn): return "the kernel's own, not a tool"
    return ''


def add_tool(
    fn:Callable,  # A function with a docstring and docments; the model calls it by its `__name__`
)->Callable:      # `fn` itself, so `@add_tool` works as a decorator
    "Offer `fn` to the model in this notebook, on top of the selected sources (a same-named tool is replaced)."
    if not callable(fn): raise TypeError(f'add_tool needs a function, not {type(fn).__name__}: {fn!r}')
    if not _named(fn): raise TypeError(f'add_tool needs a function with a name the model can call (use `def`), not {fn!r}')
    if _blocked(fn): raise ValueError(f'`{fn.__name__}` is never offered to the model (command execution); rename it')
    _NOTEBOOK[fn.__name__] = _mark(fn)
    return fn


def remove_tool(
    name:str,  # Name of a tool added with add_tool (or the function itself)
):
    "Stop offering a tool added with `add_tool`."
    name = getattr(name, '__name__', name)
    if name not in _NOTEBOOK: raise KeyError(f'no notebook tool named {name!r}; notebook_tools() lists them')
    del _NOTEBOOK[name]


def notebook_tools()->list:
    "The tools added with `add_tool`, in the order they were added."
    return list(_NOTEBOOK.values())


def _source_tools(name, factory, ctx):
    try: tools = list(factory(ctx))
    except Exception as e:   # one broken source must not stop the prompt: the others still work
        log.warning('tool source %r failed and was skipped: %s: %s', name, type(e).__name__, e)
        return []
    ok = []
    for fn in tools:
        if not callable(fn) or not _named(fn): log.warning('tool source %r gave a non-tool %r; skipped', name, fn)
        elif _blocked(fn): log.warning('tool source %r offered %r, which is never offered; dropped', name, fn.__name__)
        else: ok.append(_mark(fn))
    return ok


def parse_selection(
    setting:str,  # The `tools` setting: source names, comma-separated; `none`; or empty for the defaults
)->dict|None:     # A selection for `get_tool_list` (None: the default one)
    "The `tools` setting as a selection: every known source on or off."
    names = [t.strip() for t in setting.split(',') if t.strip()]
    return {name: name in names for name in SOURCES} if names else None


def selection_setting(selection:dict)->str:
    "The `tools` setting for `selection`: the sources that are on, or `none`."
    return ', '.join(n for n,on in selection.items() if on) or 'none'


def get_tool_list(
    selection:dict=None,    # Source name -> selected; None: DEFAULT_SELECTION; a missing name takes its default
    ctx:ToolContext=None,   # What sources work on; None skips sources that need it
)->list:                    # Callables, deduped by name, never anything in NEVER_OFFERED
    "The tools to offer: the selected sources' tools, then this notebook's own (which replace same-named ones)."
    sel, tools = selection or {}, {}
    for name,(factory, default, _) in list(SOURCES.items()):
        if not sel.get(name, DEFAULT_SELECTION.get(name, default)) or (ctx is None and _needs_ctx(factory)): continue
        for fn in _source_tools(name, factory, ctx): tools.setdefault(fn.__name__, fn)   # the first source wins
    tools.update({k: fn for k,fn in _NOTEBOOK.items() if not _blocked(fn)})
    return list(tools.values())


# ---- how the model reads the tools

_ANY = inspect.Signature([inspect.Parameter('args', inspect.Parameter.VAR_POSITIONAL)])   # a callable we cannot inspect
_SIDE_EFFECT_NOTE = '# Changes something: call it only when the user asked for that, in their own words\n'

def _anno(a): return a if isinstance(a, str) else inspect.formatannotation(a)
def _oneline(s): return ' '.join(str(s).split())


def _param(p, doc):
    star = {p.VAR_POSITIONAL: '*', p.VAR_KEYWORD: '**'}.get(p.kind, '')
    s = star + p.name + (f':{_anno(p.annotation)}' if p.annotation is not p.empty else '')
    s += f'={p.default!r}' if p.default is not p.empty else ''
    return f'    {s},' + (f'  # {_oneline(doc)}' if doc else '')


def tool_signature(
    fn:Callable,  # A tool
)->str:           # Its `def` line(s) with annotations, defaults and docments comments, then its docstring's first line
    "The tool as the model should read it: a Python signature with its docments."
    from fastcore.docments import docments
    name = getattr(fn, '__name__', type(fn).__name__)
    try: sig = inspect.signature(fn)
    except (TypeError, ValueError): sig = _ANY
    try: docs = docments(fn)
    except Exception: docs = {}   # no source to read comments from (e.g. a function built with exec)
    ps, lines = list(sig.parameters.values()), []
    for i,p in enumerate(ps):
        if p.kind == p.KEYWORD_ONLY and (i == 0 or ps[i-1].kind not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)):
            lines.append('    *,')
        lines.append(_param(p, docs.get(p.name)))
        if p.kind == p.POSITIONAL_ONLY and (i+1 == len(ps) or ps[i+1].kind != p.POSITIONAL_ONLY): lines.append('    /,')
    ret = f'->{_anno(sig.return_annotation)}' if sig.return_annotation is not sig.empty else ''
    rdoc = f'  # {_oneline(docs["return"])}' if docs.get('return') else ''
    head = f'def {name}(\n' + '\n'.join(lines) + f'\n){ret}:{rdoc}' if lines else f'def {name}(){ret}:{rdoc}'
    doc = (inspect.getdoc(fn) or '').strip().split('\n')[0]
    body = '    "' + doc.replace('\\', '\\\\').replace('"', '\\"') + '"' if doc else '    ...'
    note = _SIDE_EFFECT_NOTE if getattr(fn, INTENT_ATTR, None) is not None else ''
    return f'{note}{head}\n{body}'


def tools_system_prompt(
    tools:list,       # The tools on offer (see get_tool_list)
)->str:               # A system-prompt block, or '' when there are no tools (then add no system prompt at all)
    """Describe `tools` as Python functions already defined in the user's kernel. One wording whether the calls run by
    themselves (auto mode) or on the user's click: a prompt in either mode extends the previous one's request."""
    if not tools: return ''
    sigs = '\n\n'.join(tool_signature(fn) for fn in tools)
    return (f"These Python functions are already defined in the user's Python kernel. {CALL_CONVENTION} Do not import "
            "or redefine them. Answer plain questions in plain words without calling tools, and never call a tool the "
            "question does not need.\n\n```python\n" + sigs + "\n```")


CALL_CONVENTION = ("To use one, write a ```python block that only calls it, one call per line, with literal arguments or "
                   "the names of the user's variables; then stop: once it has run (the user may decide whether it "
                   "does), its output comes back in the next message.")
