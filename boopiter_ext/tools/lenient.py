"""Lenient recovery: tool calls a model wrote as JSON, turned into the Python calls the guards check.

`recover_calls` turns calls written as JSON (`<tool_call>` tags, ```tool_call or ```json fences, the whole reply,
native `tool_calls`) into the same Python, one call a line (JSON as small models write it, with comments and trailing
commas, repaired first: `near_json`), so every call passes the same guards (guards.py). Only
calls to offered tools with plain JSON arguments (whose repr is a Python literal) are recovered; tags quoted in code
are not calls.

    code = '\n'.join(recover_calls(reply, tools, native=msg.get('tool_calls')))
"""

__all__ = ['recover_calls', 'near_json']

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
    "The JSON value `s` holds, else that of `s` repaired as small models write it (`near_json`), else None."
    for text in (s, None):
        try: return json.loads((s if text is not None else near_json(s)).strip(), parse_constant=_no_constant)
        except (ValueError, RecursionError): continue
    return None


def near_json(
    s:str,   # Text that is almost JSON: `//` and `/* */` comments, trailing commas before `]` or `}` (seed 003)
)->str:      # The same with those removed (strings untouched), in one pass: linear in `s`
    "JSON as small models write it, made JSON: comments and trailing commas taken out, outside strings only."
    out, i, n, comma = [], 0, len(s), None   # comma: where in `out` a comma waits to see what follows it
    while i < n:
        c = s[i]
        if c == '"':   # a string, copied whole (escapes included)
            j = i + 1
            while j < n and s[j] != '"': j += 2 if s[j] == '\\' else 1
            out.append(s[i:j + 1]); i = j + 1; comma = None
        elif s.startswith('//', i):
            j = s.find('\n', i); i = n if j < 0 else j
        elif s.startswith('/*', i):
            j = s.find('*/', i + 2); i = n if j < 0 else j + 2
        elif c in ' \t\r\n': out.append(c); i += 1
        elif c in ']}' and comma is not None: out[comma] = ''; out.append(c); i += 1; comma = None   # a trailing comma
        else:
            comma = len(out) if c == ',' else None
            out.append(c); i += 1
    return ''.join(out)


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
