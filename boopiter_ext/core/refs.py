"""References in a prompt: $`name` shows the model a variable's current value, &`name` offers a function as a tool for
this prompt only.

    refs = prompt_refs('Why is $`df` empty after &`clean`?', ip.user_ns)
    refs.text    # the values, each bounded ("`df`: DataFrame, shape (0, 3) ..."), and the functions, to follow the question
    refs.tools   # {'clean': clean}
    refs.notes   # what was not sent, and why ("`api_key` is named like a secret: not sent")

A variable only a hidden cell (`boop-hide`) defines is never shown, nor a function only a hidden cell defines offered:
the model reads "`x` is defined only by a hidden cell" instead, as it does for a name like a secret's.

Large values are summarised, never sent whole: a DataFrame as its shape, dtypes and head, an array as its shape,
dtype and a sample, anything else as a bounded repr. Variables named like secrets are refused, as private names and
the kernel's own are; inside a value, whatever is held under a secret's name (`cfg['api_key']`, `db.password`, at any
depth) and anything shaped like a key (`sk-…`, `ghp_…`, a JWT) is shown as `[secret: not shown]` (`redact.py`); a
function passes the same checks `add_tool` makes.
"""

__all__ = ['Refs', 'prompt_refs', 'summarize']

import re, reprlib
from dataclasses import dataclass, field

_VAR = re.compile(r'\$`([A-Za-z_][A-Za-z0-9_]{0,99})`')
_FN = re.compile(r'&`([A-Za-z_][A-Za-z0-9_]{0,99})`')
_repr = reprlib.Repr()
_repr.maxstring, _repr.maxother, _repr.maxlong, _repr.maxlist, _repr.maxdict, _repr.maxlevel = 400, 400, 200, 30, 20, 4


@dataclass
class Refs:
    "What the references in a prompt give: text for the model, tools for this prompt, and notes for the user."
    text: str = ''
    tools: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def _clip(s, limit): return s if len(s) <= limit else s[:limit] + f'\n… [{len(s) - limit:,} more characters]'


def summarize(
    value,            # Any object from the user's namespace
    limit:int=2000,   # Characters at most
)->str:               # Its type, and its shape, dtypes and a sample where it has them, bounded; no secret in it
    "A bounded description of `value`: a DataFrame's shape, dtypes and head, an array's shape, dtype and a sample."
    from ..redact import scrub
    return scrub(_summary(value, limit))   # a key-shaped string anywhere in it: `[secret: not shown]`


def _summary(value, limit):
    from ..redact import SECRET, SECRET_NAME, redacted
    kind, mod = type(value).__name__, type(value).__module__ or ''
    try:
        if mod.startswith('pandas') and kind == 'DataFrame':
            dtypes = '\n'.join(f'  {c}: {t}' for c,t in list(value.dtypes.items())[:40])
            head = value.head(5).copy()
            for c in [c for c in head.columns if isinstance(c, str) and SECRET_NAME.search(c)]: head[c] = SECRET
            head = head.to_string(max_cols=20, max_colwidth=40)
            return _clip(f'DataFrame, shape {value.shape}\ndtypes:\n{dtypes}\nhead:\n{head}', limit)
        if mod.startswith('pandas') and kind == 'Series':
            return _clip(f'Series {value.name!r}, length {len(value)}, dtype {value.dtype}\nhead:\n'
                         f'{value.head(5).to_string(max_rows=5)}', limit)
        if mod.startswith('numpy') and kind == 'ndarray':
            import numpy as np
            sample = np.array2string(value, threshold=40, edgeitems=3, max_line_width=100)
            return _clip(f'ndarray, shape {value.shape}, dtype {value.dtype}\n{sample}', limit)
        size = f', len {len(value)}' if hasattr(type(value), '__len__') and not isinstance(value, type) else ''
        return _clip(f'{kind}{size}: {_repr.repr(redacted(value))}', limit)   # what it holds under a secret's name: left out
    except Exception as e: return f'{kind}: <could not be shown: {type(e).__name__}>'


def prompt_refs(
    question:str,         # The prompt's text
    namespace:dict,       # The user's namespace
    hidden=frozenset(),   # The names only hidden cells define (`context.build.Hidden.names`): never shown or offered
)->Refs:
    "The variables ($`name`) and functions (&`name`) `question` refers to, as text, tools and notes."
    from ..context.build import fenced
    from ..tools.kernel import _mark, user_variables, withheld
    from ..tools.registry import unofferable
    ns, allowed, refs, shown, kept = dict(namespace), user_variables(namespace, hidden), Refs(), [], []
    for name in dict.fromkeys(_VAR.findall(question)):
        if name not in ns: refs.notes.append(f'$`{name}`: no variable of that name in the kernel')
        elif (why := withheld(name, hidden)): kept.append(why)
        elif name not in allowed: refs.notes.append(f'$`{name}`: not sent (private, or the kernel\'s own)')
        else: shown.append(f'`{name}` = {summarize(ns[name])}')
    for name in dict.fromkeys(_FN.findall(question)):
        fn = ns.get(name)
        why = ('no function of that name in the kernel' if fn is None else withheld(name, hidden) if name in hidden
               else unofferable(fn))
        if why: refs.notes.append(f'&`{name}`: not offered ({why})')
        else: refs.tools[name] = _mark(fn)
    refs.notes += [f'{why}: not sent' for why in kept]
    parts = ['The variables the question names, as they are now:\n\n' + '\n\n'.join(map(fenced, shown))] if shown else []
    if kept: parts.append('Not shown to you: ' + '; '.join(kept) + '.')   # so the model does not guess at them
    if refs.tools:   # described here, with the question, not in the system prompt: the next request extends this one
        from ..tools.registry import CALL_CONVENTION, tool_signature
        parts.append('For this question you may also call these Python functions, already defined in the user\'s kernel. '
                     f'{CALL_CONVENTION}\n\n' + fenced('\n\n'.join(map(tool_signature, refs.tools.values())), 'python'))
    refs.text = '\n\n'.join(parts)
    return refs
