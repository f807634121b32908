"""The `kernel` tool source: read-only views of the user's variables and the cells that ran.

`list_variables` lists the user's own variables with their types and a short preview (never private, kernel or module
names, nor tools; a value named like a secret is hidden; a name only a hidden cell defines is not listed), and
`show_cell` shows a recorded cell with its outputs (the cells it is given: never a hidden one). `user_variables` is the
same choice of variables as a dict, for `$name` references; `tool_namespace` adds a `Withheld` marker for each one
refused, so a block naming it is told why. A tool is a function marked `boopiter_tool` (`is_tool`), by `add_tool` or by
the source that made it.

    list_variables, show_cell = kernel_tools(ip.user_ns, recorder.cells, hidden=lambda: hidden_parts(cells))
"""

__all__ = ['kernel_tools', 'user_variables', 'tool_namespace', 'withheld', 'is_tool']

import builtins, reprlib, types
from typing import Callable
from ..context.build import Hidden, cell_text, is_hidden, prompt_text, reply_text
from .guards import Withheld
from ..redact import SECRET_NAME, redacted, scrub

_KERNEL_NAMES = {'In', 'Out', 'exit', 'quit', 'get_ipython'}
_MAX_VARS = 200


def _mark(fn):
    "Mark `fn` as a tool (list_variables skips tools); some callables, like bound methods, take no attributes."
    try: fn.boopiter_tool = True
    except (AttributeError, TypeError): pass
    return fn


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
    try: preview = scrub(' '.join(_repr.repr(redacted(v)).split()))   # no secret it holds by name or by shape
    except Exception as e: preview = f'<repr failed: {type(e).__name__}>'
    return f'{name}: {kind}: {preview[:77] + "..." if len(preview) > 80 else preview}'


_MACHINERY = {'IPython', 'ipykernel', 'boopiter_ext'}   # packages whose callables are the kernel's, never the user's


def _kernel_machinery(k, v):
    """The kernel's own callables in the namespace (ipykernel's `open` wrapper, IPython's `display`, boopiter's
    `add_tool`): not the user's data, and never a tool."""
    if not callable(v): return False
    builtin = getattr(builtins, k, None)
    return builtin is not None and (v is builtin or getattr(v, '__wrapped__', None) is builtin) \
        or str(getattr(v, '__module__', '') or '').partition('.')[0] in _MACHINERY


def _user_vars(ns):
    for k,v in sorted(ns.items()):
        if k.startswith('_') or k in _KERNEL_NAMES or isinstance(v, types.ModuleType) or is_tool(v): continue
        if _kernel_machinery(k, v): continue
        yield k, v


def withheld(
    name:str,                 # A variable's name
    hidden=frozenset(),       # The names only hidden cells define (`Hidden.names`)
)->str:                       # Why the model may not see its value, in one line it reads; '' when it may
    "Why a user variable's value is kept from the model: a hidden cell alone defines it, or it is named like a secret."
    if name in hidden: return f'`{name}` is defined only by a hidden cell'
    return f'`{name}` is named like a secret' if SECRET_NAME.search(name) else ''


def user_variables(
    namespace:dict,           # The kernel's user namespace
    hidden=frozenset(),       # The names only hidden cells define (`Hidden.names`)
)->dict:                      # The variables a model may see and pass to a tool
    "The user's own variables: no private, kernel or module names, no tools, nothing named like a secret or hidden."
    return {k: v for k,v in _user_vars(dict(namespace)) if not withheld(k, hidden)}


def tool_namespace(
    namespace:dict,           # The kernel's user namespace
    hidden=frozenset(),       # The names only hidden cells define
)->dict:                      # What a block may name: the user's variables, and a `Withheld` for each one refused
    "The names a tool call may pass: `user_variables`, and the refused ones as `Withheld` markers that say why."
    return {k: Withheld(why) if (why := withheld(k, hidden)) else v for k,v in _user_vars(dict(namespace))}


def _show(cell):
    if cell.kind != 'prompt': return cell_text(cell)[0]
    return f'Prompt:\n{prompt_text(cell.source)}\n\nReply:\n{reply_text(cell) or "(none recorded)"}'


def kernel_tools(
    namespace:dict,          # The kernel's user namespace
    cells:Callable,          # Zero-argument callable returning the recorded `Cell`s in notebook order (no hidden ones)
    hidden:Callable=Hidden,  # Zero-argument callable: what the hidden cells hold (`context.build.Hidden`)
)->list:                     # [list_variables, show_cell]
    "Read-only tools over the kernel's variables and recorded cells."

    def list_variables(
        pattern:str='',  # Only names containing this text (any case)
    )->str:              # One `name: type[, shape|len]: preview` line per variable
        "List the user's variables in the kernel, with their types and a short preview"
        pat, names = str(pattern or '').lower(), hidden().names
        shown = [(k, v) for k,v in _user_vars(dict(namespace)) if k not in names]
        lines = [f'{k}: {type(v).__name__}: (value hidden: named like a secret)' if SECRET_NAME.search(k)
                 else _describe(k, v) for k,v in shown if pat in k.lower()]
        if not lines and isinstance(pattern, str) and pattern in names:   # asked for by its name: say why
            return f'({withheld(pattern, names)})'
        if not lines: return f'(no variables{f" matching {pattern!r}" if pat else ""})'
        more = len(lines) - _MAX_VARS
        return '\n'.join(lines[:_MAX_VARS] + ([f'... {more} more; pass a `pattern`'] if more > 0 else []))

    def show_cell(
        index:int=-1,  # Which cell: 0 is the first, -1 the last (most recent)
    )->str:            # The cell's source and its text outputs
        "Show one of the notebook's cells that ran, with its outputs"
        cs = [c for c in cells() if not is_hidden(c)]
        if not cs: return 'error: no cells have run yet'
        try: return _show(cs[int(index)])
        except (IndexError, TypeError, ValueError):
            return f'error: no cell {index!r}; there are {len(cs)} (0 to {len(cs)-1}, or -1 for the last)'

    return [_mark(list_variables), _mark(show_cell)]
