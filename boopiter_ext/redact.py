"""Secrets kept out of what boopiter shows, saves, logs and sends to the model.

Known keys: every API key the kernel sends is registered where it is read (`register`: the router's keys per endpoint
and for `api_base`, the clients' `api_key`, litellm's cloud keys from the environment). `mask` replaces each, wherever
it appears, with `…` and its last four characters (`[key]` for a short one): fault paragraphs (`errors.BoopError`),
every bundle a reply view publishes and saves (`masked`), and every log line of the `boopiter_ext` loggers.

Secret-looking values: `secret_values` finds the strings held under names like a secret's (`SECRET_NAME`: key, token,
secret, passw, credential) at any depth of a value (dict keys, attributes, dataclass and namedtuple fields, DataFrame
columns, inside lists and tuples); `redacted` is a stand-in for showing a value with each of them replaced by `SECRET`,
which the model reads instead; `scrub` replaces anything shaped like a well-known key in text (`sk-…`, `ghp_…`,
`AKIA…`, JWTs, PEM private keys, a long token after `key=`).

    register(os.environ['OPENAI_API_KEY'])
    mask('HTTP 401: invalid key sk-live-0123456789abcdef')    # 'HTTP 401: invalid key …cdef'
    scrub(repr(redacted(cfg)))                                # "{'api_key': '[secret: not shown]', 'user': 'ann'}"
"""

__all__ = ['SECRET_NAME', 'SECRET', 'register', 'register_environment', 'mask', 'masked', 'secret_values', 'scrub',
           'holds_secret', 'redacted', 'looks_secret']

import dataclasses, itertools, logging, os, re, reprlib, threading
from urllib.parse import quote

SECRET_NAME = re.compile(r'key|token|secret|passw|credential', re.I)   # a name that holds a secret
SECRET = '[secret: not shown]'   # what the model reads instead of a secret-looking value
_MIN_KEY = 8                     # shorter values are no keys worth registering (`none`, `EMPTY`)
_known, _lock = {}, threading.Lock()   # a key's spelling -> what it is shown as


def _shown(key): return f'…{key[-4:]}' if len(key) >= 16 else '[key]'


def register(
    key,  # A secret the kernel sends (an API key); anything else, or a short one, is ignored
):
    "Remember `key`, so `mask` hides it wherever it appears (as is, or URL-encoded)."
    if not isinstance(key, str) or len(key := key.strip()) < _MIN_KEY or key in _known: return
    with _lock:
        global _order
        _known.update({form: _shown(key) for form in (key, quote(key, safe=''))})
        _order = sorted(_known, key=len, reverse=True)   # a key inside a longer one: the longer first


_order = []


def register_environment(
    environ=None,  # The environment (default `os.environ`)
):
    "Register the value of every environment variable named like a secret (litellm reads cloud keys from there)."
    for k,v in (os.environ if environ is None else environ).items():
        if SECRET_NAME.search(k): register(v)


def mask(
    text,  # Any text
)->str:    # `text` with every registered key replaced by `…` and its last four characters
    "Hide every known key in `text` (anything but a string comes back as it is)."
    if not _order or not isinstance(text, str): return text
    for k in _order:
        if k in text: text = text.replace(k, _known[k])
    return text


def masked(
    obj,           # A bundle: dicts, lists and strings (JSON-like)
    depth:int=0,
)->object:         # The same, every string masked (a new object only where something changed)
    "`mask` through a mime bundle, its metadata, or any JSON-like value."
    if not _order: return obj
    if isinstance(obj, str): return mask(obj)
    if depth > 64: return obj
    if isinstance(obj, dict): return {mask(k): masked(v, depth + 1) for k,v in obj.items()}
    if isinstance(obj, (list, tuple)): return type(obj)(masked(v, depth + 1) for v in obj)
    return obj


# ---- log lines: every record of a `boopiter_ext` logger is masked when it is made

_factory = logging.getLogRecordFactory()

def _record(*args, **kw):
    rec = _factory(*args, **kw)
    if _order and rec.name.split('.')[0] == 'boopiter_ext':
        try: rec.msg, rec.args = mask(rec.getMessage()), None
        except Exception: pass   # a record whose arguments do not format: logging reports it as usual
        if rec.exc_info and rec.exc_info[1] is not None:
            rec.exc_text = mask(logging.Formatter().formatException(rec.exc_info))
    return rec

if getattr(_factory, '__module__', None) != __name__: logging.setLogRecordFactory(_record)


# ---- values that look like secrets

_SHAPE = re.compile(r'(?<![A-Za-z0-9_])(?:' + '|'.join([   # each begins with one of `_PREFIXES`
    r'-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s]*)',
    r'sk-(?:ant-|proj-|live-|svcacct-)?[A-Za-z0-9_-]{16,}', r'[sr]k_(?:live|test)_[A-Za-z0-9]{16,}',
    r'gh[pousr]_[A-Za-z0-9]{20,}', r'github_pat_[A-Za-z0-9_]{20,}', r'xox[abposr]-[A-Za-z0-9-]{10,}',
    r'(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])', r'AIza[0-9A-Za-z_-]{35}', r'hf_[A-Za-z0-9]{20,}', r'glpat-[A-Za-z0-9_-]{20,}',
    r'eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}']) + ')')
_PREFIXES = ('-----BEGIN', 'sk-', 'sk_', 'rk_', 'ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_', 'xox', 'AKIA', 'ASIA', 'AIza', 'hf_', 'glpat-', 'eyJ')
_VALUE = re.compile(r'''[=:](?=\s*['"]?([A-Za-z0-9+/_.~=-]{16,}))''')   # a long token after each `=` or `:`
_NAMED = re.compile(r'''(?i)(?:key|token|secret|passw\w*|credential)s?['"]?\s*\Z''')   # ...just after a secret's name


def _mixed(v): return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _spans(text):
    "Where `text` holds a key-shaped string: found from literal prefixes (a scan in C each), then matched in place."
    out = []
    for p in _PREFIXES:
        i = text.find(p)
        while i >= 0:
            if (m := _SHAPE.match(text, i)): out.append(m.span())
            i = text.find(p, i + 1)
    for m in _VALUE.finditer(text):
        if _mixed(m[1]) and _NAMED.search(text[max(0, m.start() - 40):m.start()]): out.append(m.span(1))
    return sorted(out)


def scrub(
    text:str,     # Text about to reach the model (a value's summary, a tool's output, a cell)
)->str:           # `text` with each well-known key shape, and each key the kernel sends, replaced by `SECRET`
    "Replace what looks like a key in `text`: `sk-…`, `ghp_…`, `AKIA…`, a JWT, a PEM private key, a long token after `key=`."
    parts, at = [], 0
    for a,b in _spans(text):
        if a < at: continue   # inside one already replaced
        parts += [text[at:a], SECRET]
        at = b
    return mask(''.join(parts + [text[at:]]) if parts else text)


_MAX_SEEN, _MAX_ITEMS, _MAX_DEPTH = 5_000, 1_000, 12


def _strings(v, out, depth=0):
    "Every string inside `v` (a secret's value may be a list or dict of them)."
    if depth > _MAX_DEPTH or len(out) > _MAX_SEEN: return
    if isinstance(v, str): return out.add(v)
    if isinstance(v, (bytes, bytearray)): return out.add(bytes(v[:10_000]).decode('utf-8', 'replace'))
    items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple, set, frozenset)) else ()
    for x in list(items)[:_MAX_ITEMS]: _strings(x, out, depth + 1)


def _fields(v):
    "(name, value) pairs of an object's named parts: dataclass and namedtuple fields, DataFrame columns, attributes."
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return [(f.name, getattr(v, f.name, None)) for f in dataclasses.fields(v)]
    if isinstance(v, tuple) and hasattr(v, '_fields'): return list(zip(v._fields, v))
    if type(v).__name__ == 'DataFrame' and (type(v).__module__ or '').startswith('pandas'):
        return [(c, list(v[c].head(5))) for c in list(v.columns)[:_MAX_ITEMS] if isinstance(c, str) and SECRET_NAME.search(c)]
    if isinstance(v, (type, type(os))) or callable(v): return []
    d = getattr(v, '__dict__', None)
    named = list(d.items())[:_MAX_ITEMS] if isinstance(d, dict) else []
    return named + [(s, getattr(v, s, None)) for s in getattr(type(v), '__slots__', ()) if isinstance(s, str)][:_MAX_ITEMS]


def looks_secret(
    s:str,   # A string value
)->bool:     # Whether it is, or holds, something shaped like a key (or a key the kernel sends)
    "Whether `s` holds a well-known key shape, a long token after a secret's name, or a registered key."
    return scrub(s[:1_000_000]) != s[:1_000_000]


def _walk(v, found, names, path, seen, depth):
    if depth > _MAX_DEPTH or id(v) in seen or len(seen) > _MAX_SEEN: return
    seen.add(id(v))
    if isinstance(v, str):   # a string anywhere, shaped like a key: a secret whatever its name
        if looks_secret(v): found.add(v); names.append(path or 'its value')
        return
    if isinstance(v, (bytes, bytearray, int, float, bool, type(None))): return
    if isinstance(v, dict): pairs = list(v.items())[:_MAX_ITEMS]
    elif isinstance(v, (list, tuple, set, frozenset)) and not hasattr(v, '_fields'):
        pairs = [(None, x) for x in list(v)[:_MAX_ITEMS]]
    else:
        try: pairs = _fields(v)
        except Exception: return   # an object that will not say what it holds: its repr is scrubbed by shape only
    for k,x in pairs:
        where = f'{path}.{k}' if path and isinstance(k, str) else k if isinstance(k, str) else path
        if isinstance(k, str) and SECRET_NAME.search(k):
            n = len(found)
            _strings(x, found)
            if len(found) > n: names.append(where)
        else: _walk(x, found, names, where, seen, depth + 1)


def secret_values(
    value,  # Any object from the user's namespace
)->set:     # The strings it holds under a secret's name, at any depth, and those shaped like a key
    "The secrets a value holds: under dict keys, attributes or fields named like a secret's, however deep, or by shape."
    found = set()
    _walk(value, found, [], '', set(), 0)
    return found


def holds_secret(
    value,  # Any object from the user's namespace
)->str:     # Where the first secret it holds is (`api_key`, `db.password`), or ''
    "Where `value` holds a secret by name, or ''."
    found, names = set(), []
    _walk(value, found, names, '', set(), 0)
    return names[0] if names else ''


_SHOWN = 200   # items of a container a stand-in keeps: more than any summary shows
_short = reprlib.Repr()
_short.maxstring, _short.maxother, _short.maxlist, _short.maxdict, _short.maxlevel = 200, 200, 20, 20, 3


class _Stand:
    "What a value with secrets inside is shown as: its repr, built with the secrets left out."
    def __init__(self, text): self.text = text
    def __repr__(self): return self.text


def redacted(
    value,          # Any object from the user's namespace
    secrets=None,   # Its `secret_values` (found when None)
    depth:int=0,
)->object:          # `value` itself when it holds no secret; else a stand-in whose repr shows `SECRET` in their place
    "A stand-in for showing `value`: its containers (their first items), fields and attributes, each secret left out."
    secrets = secret_values(value) if secrets is None else secrets
    if not secrets or depth > _MAX_DEPTH: return value
    def r(x): return redacted(x, secrets, depth + 1)
    if isinstance(value, str): return SECRET if value in secrets else value
    if isinstance(value, (bytes, bytearray)): return SECRET if bytes(value[:10_000]).decode('utf-8', 'replace') in secrets else value
    if isinstance(value, dict): return {k: r(x) for k,x in itertools.islice(value.items(), _SHOWN)}
    if isinstance(value, tuple) and hasattr(value, '_fields') or dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _Stand(f'{type(value).__name__}(' + ', '.join(f'{n}={_short.repr(r(x))}' for n,x in _fields(value)) + ')')
    if isinstance(value, (list, tuple)): return type(value)(r(x) for x in value[:_SHOWN])
    if isinstance(value, (set, frozenset)): return type(value)(r(x) for x in itertools.islice(value, _SHOWN))
    if holds_secret(value): return _Stand(f'<{type(value).__name__} holding a secret: not shown>')
    return value
