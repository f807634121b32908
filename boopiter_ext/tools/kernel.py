"""The `kernel` tool source: read-only views of the user's variables and the cells that ran.

`list_variables` lists the user's own variables with their types and a short preview (never private, kernel or module
names, nor tools; a value named like a secret is hidden), and `show_cell` shows a recorded cell with its outputs.
`user_variables` is the same choice of variables as a dict, for `$name` references and tool arguments. A tool is a
function marked `boopiter_tool` (`is_tool`), by `add_tool` or by the source that made it.

    list_variables, show_cell = kernel_tools(ip.user_ns, recorder.cells)
"""

__all__ = ['kernel_tools', 'user_variables', 'is_tool']

import builtins, re, reprlib, types
from typing import Callable
from ..context.build import cell_text, prompt_text, reply_text

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

