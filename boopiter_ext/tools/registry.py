"""Tools the model calls by writing Python: plain functions in the kernel, described as Python signatures.

Tools are never passed as a chat API's native `tools=`: Ollama/Qwen chat templates turn that into a
`<tools>` block that makes local models call a tool on every prompt. Instead the functions are pushed
into the kernel's namespace and `tools_system_prompt` shows them as Python `def` lines with their
docments; the model uses one by writing a ```python block that calls it.

Tools come from *sources* (`SOURCES`: name -> (factory, on by default, description)); a factory gets a
`ToolContext` (the notebook's folder, the kernel namespace, the recorded cells) and returns functions.
`get_tool_list(selection, ctx)` assembles the selected sources plus the notebook's own `add_tool`
functions. Names in `NEVER_OFFERED` (remote or arbitrary command execution) are dropped whatever a
source contributes or the selection says. The built-in sources only read: `files` (files.py) stays inside the
notebook's folder; `kernel` (kernel.py) lists variables and shows cells.
A tool that changes something is marked with `@side_effect(intent)`; guards.py runs it only when
the user's own prompt matches `intent`. Tools answer in text, and problems come back as `error: ...`.

    ctx = ToolContext(Path('.'), ip.user_ns, recorder.cells)
    tools = get_tool_list({'files': True, 'kernel': False}, ctx)
    system = tools_system_prompt(tools)     # '' when there are no tools: then no system prompt is added
"""

__all__ = ['SOURCES', 'DEFAULT_SELECTION', 'NEVER_OFFERED', 'ToolContext', 'register_tool_source', 'unregister_tool_source', 'SOURCE_LISTENERS', 'get_tool_list',
           'add_tool', 'remove_tool', 'notebook_tools', 'side_effect', 'tool_signature', 'example_call', 'tools_system_prompt',
           'parse_selection', 'selection_setting', 'unofferable', 'needs_consent', 'on_tool_error', 'tool_error_hook']

import builtins, inspect, keyword, logging, re, time, typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from .guards import INTENT_ATTR, limits_text
from ..context.build import Hidden
from .kernel import _KERNEL_NAMES, _kernel_machinery, _mark, kernel_tools
from .files import file_tools

log = logging.getLogger(__name__)

NEVER_OFFERED = frozenset({'run_cmd', 'remote_launch', 'remote_status', 'remote_smoke_test', 'exec', 'eval', 'system',
                           'shell', 'bash', 'sh', 'subprocess_run', 'run_shell', 'os_system', 'popen'})
_NEVER_MODULES = {'subprocess', 'pty', 'os', 'posix', 'nt', 'shutil', 'builtins'}   # callables from these are never tools


def side_effect(
    intent:str,  # Regex the user's own prompt must match before the tool may run (checked in guards.py)
):
    "Decorator marking a tool that changes something; guards.py runs it only when the user's prompt matches `intent`."
    re.compile(intent)   # a bad pattern is a programming error: fail where the tool is defined
    def deco(fn):
        setattr(fn, INTENT_ATTR, intent)
        return fn
    return deco


@dataclass
class ToolContext:
    "What a tool source may use: the notebook's folder, the kernel's namespace, its cells, and the frontend's edits."
    root: Path                                       # The notebook's folder: file tools stay inside it
    namespace: dict = field(default_factory=dict)    # The kernel's user namespace
    cells: Callable = lambda: []                     # Zero-argument callable: the recorded `Cell`s in notebook order
    notebook: Callable = lambda: []                  # Zero-argument callable: every cell of the notebook, in order
    edit: Callable = None                            # edit(request) -> (ok, message), through the frontend; or None
    settings: dict = field(default_factory=dict)     # The resolved settings: a source reads its own keys (`web_allow`)
    hidden: Callable = Hidden                        # Zero-argument callable: what the hidden cells hold (`Hidden`)
    notebook_file: Callable = lambda: None           # Zero-argument callable: the open notebook's file, or None
    wait: bool = True                                # False: only a look (the menu): a source starts nothing it waits for
    def __post_init__(self): self.root = Path(self.root)


# ---- sources, selection and the notebook's own tools

def _kernel_source(ctx): return kernel_tools(ctx.namespace, ctx.cells, ctx.hidden)
def _files_source(ctx): return file_tools(ctx.root, ctx.hidden)

def _notebook_source(ctx):
    from .notebook import notebook_source
    return notebook_source(ctx.notebook, ctx.edit)

def _web_source(ctx):
    from .web import web_source   # imported when the source is used: `%load_ext` stays cheap
    return web_source(ctx)

def _pdf_source(ctx):
    from .pdf import pdf_source
    return pdf_source(ctx)

def _nbfiles_source(ctx):
    from .nbfiles import nbfiles_source
    return nbfiles_source(ctx)

def _machine_source(ctx=None):
    from .machine import machine_source
    return machine_source(ctx)

def _ci_source(ctx=None):
    from .ci import ci_source
    return ci_source(ctx)

SOURCES = {  # name: (factory(ctx)->list of tools, selected by default, description for the tools menu)
    'kernel': (_kernel_source, True, "Variables and cells of this kernel (read-only)"),
    'files': (_files_source, True, "Files under the notebook's folder: list, read, search (read-only)"),
    'notebook': (_notebook_source, False, "The notebook's cells: list, read, search; add and edit them (through the "
                                          "extension, on your word, undoable)"),
    'web': (_web_source, False, "Fetch a public web page as text (GET only; private addresses need `web_allow`)"),
    'pdf': (_pdf_source, False, "Read PDFs under the notebook's folder as text (needs pypdf: `pip install pypdf`)"),
    'nbfiles': (_nbfiles_source, False, "Other notebooks under the notebook's folder: read and search their cells; edit, "
                                        "add and insert cells on your word (written whole, outputs kept valid)"),
    'machine': (_machine_source, False, "Free memory on each GPU (or the machine) and what Ollama's loaded models hold "
                                        "(read-only)"),
    'ci': (_ci_source, False, "A GitHub repository's CI runs (one GET to the GitHub API; a token from GITHUB_TOKEN)"),
}
DEFAULT_SELECTION = {name: default for name,(_,default,_) in SOURCES.items()}
# Sources that act (change the notebook) or reach outside it (the network): only you may turn them on; a notebook or a
# project's settings.ini may only propose them (core/consent.py). `files`, `kernel` and `pdf` read inside the folder;
# `machine` reads this machine's memory.
ACTS_OR_REACHES_OUT = {'notebook', 'web', 'nbfiles', 'ci'}
_NOTEBOOK = {}   # name: fn, the tools this process added with add_tool
SOURCE_LISTENERS = []   # listener() after code added or dropped a source outside the settings (`add_mcp_server`): the
                        # menu lists the sources again


def register_tool_source(
    name:str,           # Key in a selection, e.g. 'web'
    factory:Callable,   # factory(ctx:ToolContext)->list of tools; give `ctx` a default if it works without one
    default:bool=False, # Whether the source is selected unless a selection says otherwise
    description:str='', # One line for the tools menu
    acts_or_reaches_out:bool=True, # Whether it changes something or reaches outside the notebook's folder (the network,
                                   # another program): then a notebook or a project may only propose it (consent.py)
):
    "Add (or replace) a tool source."
    if not callable(factory): raise TypeError(f'tool source {name!r}: the factory must be callable, not {factory!r}')
    SOURCES[name] = (factory, default, description)
    DEFAULT_SELECTION[name] = default
    if acts_or_reaches_out: ACTS_OR_REACHES_OUT.add(name)
    else: ACTS_OR_REACHES_OUT.discard(name)


def unregister_tool_source(
    name:str,  # A source `register_tool_source` added
):
    "Take a source out (a server that settings no longer declare); a name not registered is left alone."
    SOURCES.pop(name, None)
    DEFAULT_SELECTION.pop(name, None)
    ACTS_OR_REACHES_OUT.discard(name)


def needs_consent(name:str)->bool:
    "Whether only you may turn on the tool source `name` (it acts or reaches out, or it is not known here)."
    return name in ACTS_OR_REACHES_OUT or name not in SOURCES


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


_ERROR_HOOK = [None]   # on_tool_error's hook


def on_tool_error(
    fn:Callable=None,  # fn(name, exception) -> the text the model reads of a tool's failure; None: its own text again
)->Callable:           # `fn`, so `@on_tool_error` works as a decorator
    """Choose what the model reads when a tool raises (seed 004's `onToolError`): redact a secret or a path from the
    error, shorten it; raising from `fn` fails the tool loop. By default the model reads `error: Type: message`."""
    if fn is not None and not callable(fn): raise TypeError(f'on_tool_error needs a function, not {type(fn).__name__}')
    _ERROR_HOOK[0] = fn
    return fn


def tool_error_hook()->Callable|None:
    "The hook `on_tool_error` set, if any."
    return _ERROR_HOOK[0]


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


_SAID = {}   # source name: (what its failure said, when): said once a minute, not at every look at the tools


def _source_tools(name, factory, ctx):
    try: tools = list(factory(ctx))
    except Exception as e:   # one broken source must not stop the prompt: the others still work
        said, now = f'{type(e).__name__}: {e}', time.monotonic()
        if _SAID.get(name, ('', -60.0))[0] != said or now - _SAID[name][1] >= 60:
            log.warning('tool source %r failed and was skipped: %s', name, said)
            _SAID[name] = (said, now)
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

def _anno(a):
    if typing.get_origin(a) is typing.Annotated: a = typing.get_args(a)[0]   # its comment is the docment (`_ann_doc`)
    return a if isinstance(a, str) else inspect.formatannotation(a)

def _ann_doc(a):
    "The first text in `Annotated[T, 'text']`: a parameter's docment where there is no source to read comments from."
    if typing.get_origin(a) is not typing.Annotated: return None
    return next((m for m in a.__metadata__ if isinstance(m, str)), None)
def _oneline(s): return ' '.join(str(s).split())


def _param(p, doc):
    star = {p.VAR_POSITIONAL: '*', p.VAR_KEYWORD: '**'}.get(p.kind, '')
    s = star + p.name + (f':{_anno(p.annotation)}' if p.annotation is not p.empty else '')
    s += f'={p.default!r}' if p.default is not p.empty else ''
    return f'    {s},' + (f'  # {_oneline(doc)}' if doc else '')


def _resolved(fn, sig)->dict:
    "String annotations (`from __future__ import annotations`) as the types they name, bounds kept; {} if they cannot be."
    if not any(isinstance(p.annotation, str) for p in sig.parameters.values()): return {}
    try: return typing.get_type_hints(fn, include_extras=True)
    except Exception: return {}


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
    hints = _resolved(fn, sig)
    ps, lines = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()], []
    for i,p in enumerate(ps):
        if p.kind == p.KEYWORD_ONLY and (i == 0 or ps[i-1].kind not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)):
            lines.append('    *,')
        doc = '; '.join(filter(None, [docs.get(p.name) or _ann_doc(p.annotation), limits_text(p.annotation)]))
        lines.append(_param(p, doc))
        if p.kind == p.POSITIONAL_ONLY and (i+1 == len(ps) or ps[i+1].kind != p.POSITIONAL_ONLY): lines.append('    /,')
    ret = f'->{_anno(sig.return_annotation)}' if sig.return_annotation is not sig.empty else ''
    rdoc = f'  # {_oneline(docs["return"])}' if docs.get('return') else ''
    head = f'def {name}(\n' + '\n'.join(lines) + f'\n){ret}:{rdoc}' if lines else f'def {name}(){ret}:{rdoc}'
    doc = (inspect.getdoc(fn) or '').strip().split('\n')[0]
    body = '    "' + doc.replace('\\', '\\\\').replace('"', '\\"') + '"' if doc else '    ...'
    note = _SIDE_EFFECT_NOTE if getattr(fn, INTENT_ATTR, None) is not None else ''
    return f'{note}{head}\n{body}'


_SAMPLES = {str: "'text'", int: '3', float: '2.5', bool: 'True', list: '[1, 2]', dict: "{'key': 'value'}"}


def example_call(
    fn,   # A tool
)->str:   # A call of it with made-up literal arguments for its required parameters, as a reply would write it
    "How calling `fn` looks: its name and a sample literal for each required parameter, by its annotation."
    try: sig = inspect.signature(fn)
    except (TypeError, ValueError): return f'{fn.__name__}()'
    hints = _resolved(fn, sig)
    def sample(t):
        while typing.get_origin(t) is typing.Annotated: t = typing.get_args(t)[0]   # the type its bounds are on
        return _SAMPLES.get(typing.get_origin(t) or t, "'...'")
    args = [sample(hints.get(p.name, p.annotation)) for p in sig.parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return f'{fn.__name__}({", ".join(args)})'


def tools_system_prompt(
    tools:list,           # The tools on offer (see get_tool_list)
    example:bool=False,   # Show how a reply that calls a tool looks (seed 003's few-shot example, for small models)
)->str:                   # A system-prompt block, or '' when there are no tools (then add no system prompt at all)
    """Describe `tools` as Python functions already defined in the user's kernel. One wording whether the calls run by
    themselves (auto mode) or on the user's click: a prompt in either mode extends the previous one's request."""
    if not tools: return ''
    sigs = '\n\n'.join(tool_signature(fn) for fn in tools)
    shown = ('\n\nFor example, a reply that needs the first of them is only this (with the arguments the question '
             f'gives):\n\n```python\n{example_call(tools[0])}\n```') if example else ''
    return (f"These Python functions are already defined in the user's Python kernel. {CALL_CONVENTION} Do not import "
            "or redefine them. Answer plain questions in plain words without calling tools, and never call a tool the "
            "question does not need.\n\n```python\n" + sigs + "\n```" + shown)


CALL_CONVENTION = ("To use one, write a ```python block that only calls it, one call per line, with literal arguments or "
                   "the names of the user's variables; then stop: once it has run (the user may decide whether it "
                   "does), its output comes back in the next message.")
