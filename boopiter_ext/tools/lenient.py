"""Lenient recovery: tool calls a model wrote as JSON, turned into the Python calls the guards check.

`recover_calls` turns calls written as JSON (`<tool_call>` tags, ```tool_call or ```json fences, the whole reply,
native `tool_calls`) into the same Python, one call a line, so every call passes the same guards (guards.py). Only
calls to offered tools with plain JSON arguments (whose repr is a Python literal) are recovered; tags quoted in code
are not calls.

    code = '\n'.join(recover_calls(reply, tools, native=msg.get('tool_calls')))
"""

__all__ = ['recover_calls']

import json, keyword, math, re
from collections.abc import Mapping
from .blocks import _fences

_OPEN_TAG, _CLOSE_TAG = re.compile(r'(?i)<tool_call>'), re.compile(r'(?i)</tool_call>')


def _tags(text):
    "(start, inside) of each <tool_call>…</tool_call>, from the last opening tag before each closing one (linear)."
    opens, out, i = [m.span() for m in _OPEN_TAG.finditer(text)], [], 0
    for c in _CLOSE_TAG.finditer(text):
        j = i
        while j < len(opens) and opens[j][1] <= c.start(): j += 1
        if j > i: out.append((opens[j-1][0], text[opens[j-1][1]:c.start()]))   # a tag left open is dropped
        i = j
    return out


def _no_constant(c): raise ValueError(c)   # NaN and Infinity are not JSON values, and their repr is not a literal

def _json(s):
    try: return json.loads(s.strip(), parse_constant=_no_constant)
    except (ValueError, RecursionError): return None


def _plain(v, depth=0)->bool:
    "Whether `v` is a JSON value whose repr is a Python literal, nested at most 20 deep (the parser's limit is 200)."
    if depth > 20: return False
    if type(v) is float: return math.isfinite(v)
    if type(v) is list: return all(_plain(x, depth + 1) for x in v)
    if type(v) is dict: return all(type(k) is str and _plain(x, depth + 1) for k,x in v.items())
    return v is None or type(v) in (str, int, bool)   # exact types: a subclass's repr need not be a literal


def _get(o, k): return o.get(k) if isinstance(o, Mapping) else getattr(o, k, None)

def _ident(s): return isinstance(s, str) and s.isidentifier() and not keyword.iskeyword(s) and not s.startswith('__')


def _source(item, names):
    "`name(k=v, ...)` for one JSON-shaped call to an offered tool, else None."
    fn = _get(item, 'function') or item
    name, args = _get(fn, 'name'), _get(fn, 'arguments')
    if args is None: args = _get(fn, 'parameters')
    if args is None: args = {}
    if isinstance(args, str): args = _json(args)
    if not _ident(name) or name not in names or not isinstance(args, Mapping): return None
    if not all(_ident(k) and _plain(v) for k,v in args.items()): return None
    return f'{name}({", ".join(f"{k}={v!r}" for k,v in args.items())})'


def _blobs(text):
    "JSON written as calls: the whole reply, else <tool_call> tags outside code and ```tool_call/```json blocks."
    if _json(text) is not None: return [text]
    fences, parts, pos = _fences(text), [], 0
    for _,_,s,e,_,_ in fences:   # tags quoted in code are not calls: blank the fences out, keeping every offset
        parts += [text[pos:s], ' ' * (e - s)]
        pos = e
    found = _tags(''.join(parts) + text[pos:])
    found += [(s, code) for lang,code,s,_,closed,_ in fences if closed and lang in ('tool_call', 'json')]
    return [b for _,b in sorted(found, key=lambda t: t[0])]


def recover_calls(
    text:str,     # A reply that may hold calls written as JSON instead of Python
    tool_names,   # Names of the offered tools; calls to anything else are ignored
    native=None,  # The reply's native `tool_calls` (OpenAI/Ollama shape), if any
)->list:          # Python source, one call a line, e.g. `add_numbers(a=47, b=23)`
    "Lenient recovery: calls written as JSON (tags, fences, the whole reply, native tool_calls) as Python lines."
    names, items = set(tool_names), list(native or [])
    for b in _blobs(text or ''):
        obj = _json(b)
        items += obj if isinstance(obj, list) else [obj] if obj is not None else []
    return [s for it in items if (s := _source(it, names))]
