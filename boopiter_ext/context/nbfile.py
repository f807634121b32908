"""Finding the open notebook's file and reading its saved cells, without ever writing it.

Where the path comes from, first found wins:

1. `__vsc_ipynb_file__` in the user namespace (VS Code sets it after start-up, so it is read lazily);
2. `JPY_SESSION_NAME` in the environment, or `__session__` (Jupyter Server, ipykernel >= 6.21.2);
3. `BOOPITER_NOTEBOOK` in the environment (set it for nbclient, papermill and `jupyter execute`).

The file is read with the stdlib `json` module rather than nbformat: importing nbformat pulls in
jsonschema's format checkers, measured at 1.7 s in a JupyterLab environment, and a prompt only needs
the cells. Reads are cached until the file changes.

A notebook is a file anyone can write, so what is read from it is made trustworthy here, once
(`clean_output`): texts are strings, an error's traceback is a list of strings, JSON values nest at
most `DEPTH` deep, and anything of another shape is dropped. `load_json` is the JSON reader for every
file boopiter reads back (notebooks, cassettes, the reply cache): it never raises RecursionError, and
NaN, infinities and numbers too long to hold become null.
"""

__all__ = ['notebook_path', 'saved_notebook', 'saved_cells', 'shown_cells', 'load_json', 'json_value', 'clean_output', 'DEPTH']

import json, math, os
from pathlib import Path
from .build import Cell, cell_tags, is_prompt

DEPTH = 64   # lists and dicts deep: far more than any file of ours, far less than what makes Python recurse too deep
_KINDS = ('stream', 'display_data', 'execute_result', 'error')
_cache = {}


def _float(s):
    f = float(s)
    return f if math.isfinite(f) else None   # `1e999`

def _int(s): return int(s) if len(s) <= 4000 else None   # Python refuses to read longer ones (int_max_str_digits)


def load_json(
    text:str,  # JSON text from a file
)->object:     # Its value; NaN, Infinity, `1e999` and 4,000-digit numbers as None
    "Parse `text`; ValueError (never RecursionError) if it is not JSON or nests too deeply for Python."
    try: return json.loads(text, parse_constant=lambda c: None, parse_float=_float, parse_int=_int)
    except RecursionError: raise ValueError('nested too deeply') from None


def _text(s):
    "`s` without lone surrogates (JSON `\\ud800` escapes), which no UTF-8 writer downstream could encode."
    return s if s.isascii() else s.encode('utf-8', 'replace').decode('utf-8')


def json_value(
    v,               # A value parsed from JSON
    depth:int=DEPTH, # Lists and dicts it may nest
)->object:           # The same, strings made encodable; ValueError if it nests deeper than `depth`
    "`v` as code downstream may walk it: recursion through it stays shallow, and every string encodes."
    if isinstance(v, str): return _text(v)
    if not isinstance(v, (list, dict)): return v if v is None or isinstance(v, (bool, int, float)) else None
    if depth <= 0: raise ValueError('nested too deeply')
    if isinstance(v, list): return [json_value(x, depth-1) for x in v]
    return {_text(str(k)): json_value(x, depth-1) for k,x in v.items()}


def _lines(v):
    "Text saved as a string or a list of lines (nbformat's two forms; other items skipped) as one string, else None."
    if isinstance(v, str): return _text(v)
    return _text(''.join(s for s in v if isinstance(s, str))) if isinstance(v, list) else None


def _word(v):
    "An error's name or value as text: strings, and numbers someone saved instead; anything else is ''."
    return _text(v) if isinstance(v, str) else str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else ''


def _is_json_mime(m): return m == 'application/json' or m.startswith('application/') and m.endswith('+json')


def _json_or(v, default):
    try: return json_value(v)
    except ValueError: return default


def _data(d)->dict:
    "A mime bundle readers may trust: text types as one string, JSON types' values not too deep; the rest dropped."
    out = {}
    for m,v in (d.items() if isinstance(d, dict) else ()):
        v = _json_or(v, None) if _is_json_mime(m) else _lines(v)
        if v is not None: out[_text(m)] = v
    return out


def clean_output(
    o,  # An output as saved in a notebook file (or a reply cache file)
)->dict|None:   # The output with only the fields of its `output_type`, each of its type; None if it is no output
    "An output as the context builder and the reply cache read it: nbformat's shape, whatever the file held."
    if not isinstance(o, dict) or o.get('output_type') not in _KINDS: return None
    kind, md = o['output_type'], o.get('metadata')
    out = dict(output_type=kind, metadata=_json_or(md, {}) if isinstance(md, dict) else {})
    if kind == 'stream':
        name = o['name'] if o.get('name') in ('stdout', 'stderr') else 'stdout'
        return dict(out, name=name, text=_lines(o.get('text')) or '')
    if kind == 'error':   # a traceback is a list of lines; one saved as a single string is kept as one line
        tb = o.get('traceback')
        tb = [tb] if isinstance(tb, str) else tb if isinstance(tb, list) else []
        return dict(out, ename=_word(o.get('ename')), evalue=_word(o.get('evalue')),
                    traceback=[_text(s) for s in tb if isinstance(s, str)])
    out['data'] = _data(o.get('data'))
    if kind == 'execute_result': out['execution_count'] = _count(o.get('execution_count'))
    return out


def _count(n): return n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 10**9 else None


def _candidates(user_ns, environ):
    yield user_ns.get('__vsc_ipynb_file__')
    yield environ.get('JPY_SESSION_NAME')
    yield user_ns.get('__session__')
    yield environ.get('BOOPITER_NOTEBOOK')


def notebook_path(
    user_ns:dict=None,  # The kernel's user namespace
    environ:dict=None,  # Environment (default `os.environ`)
)->Path|None:           # The notebook file, if it can be found on disk
    "The open notebook's `.ipynb` file, from the variables Jupyter frontends set."
    user_ns, environ = user_ns or {}, os.environ if environ is None else environ
    for cand in _candidates(user_ns, environ):
        if not cand or not str(cand).endswith('.ipynb'): continue
        p = Path(str(cand)).expanduser()
        for q in (p, Path.cwd()/p.name):  # a server-relative session name: the kernel runs in the notebook's folder
            if q.is_file(): return q.resolve()
    return None


def _cell(c):
    src = _lines(c.get('source', '')) or ''
    kind = 'markdown' if c.get('cell_type') == 'markdown' else 'prompt' if is_prompt(src) else 'code'
    outs = c.get('outputs') if isinstance(c.get('outputs'), list) else []
    cid, att = c.get('id'), c.get('attachments')
    att = {_text(k): _data(b) for k,b in att.items() if isinstance(b, dict)} if isinstance(att, dict) else {}
    return Cell(src, kind, outputs=[o for o in map(clean_output, outs) if o],
                cell_id=_text(cid) if isinstance(cid, str) and 0 < len(cid) <= 256 else None,
                exec_count=_count(c.get('execution_count')), origin='file', attachments=att,
                tags=tuple(map(_text, cell_tags(c.get('metadata')))))


def saved_notebook(
    path:Path,  # A notebook file
)->tuple|None:  # (its code and Markdown cells, its metadata), or None if it cannot be read
    "The saved notebook at `path`: its cells (raw cells skipped) and its metadata, cached until the file changes."
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
        if (got := _cache.get(key)) is None:   # one file cached; readers on other threads may race: harmless
            nb = load_json(path.read_text(encoding='utf-8'))
            raw = nb.get('cells', []) if isinstance(nb, dict) else None
            if not isinstance(raw, list): return None   # not a notebook
            cells = [_cell(c) for c in raw if isinstance(c, dict) and c.get('cell_type') in ('code', 'markdown')]
            meta = _json_or(nb.get('metadata'), {})
            got = cells, meta if isinstance(meta, dict) else {}
            _cache.clear()
            _cache[key] = got
        return got
    except (OSError, ValueError): return None   # unreadable: treated as unknown


def saved_cells(
    path:Path,  # A notebook file
)->list|None:   # Its code and Markdown cells, or None if it cannot be read
    "The cells of the saved notebook at `path` (raw cells skipped), cached until the file changes."
    return (saved_notebook(path) or (None,))[0]


_MAX_SHOWN, _MAX_SOURCE = 20_000, 1 << 20   # cells a frontend may describe; characters of one cell's source


def shown_cells(
    shown,             # The cells as the frontend shows them: [{id, cell_type, source, tags}] (untrusted: checked here)
    saved:list=None,   # The saved notebook's cells (`saved_cells`), for outputs and attachments
)->list|None:          # `Cell`s in notebook order, or None if `shown` is not a list of cells
    """The notebook as the user sees it: the frontend's cells (unsaved edits, new cells and tags included), each with the
    outputs and attachments its saved version has. A cell whose text differs from the saved one's is marked
    `frontend`; the others stay `file`, as saved."""
    if not isinstance(shown, list) or len(shown) > _MAX_SHOWN: return None
    by_id = {c.cell_id: c for c in saved or () if c.cell_id}
    out = []
    for d in shown:
        if not isinstance(d, dict) or d.get('cell_type') not in ('code', 'markdown') or not isinstance(d.get('source'), str):
            continue
        src, cid = d['source'][:_MAX_SOURCE], d.get('id') if isinstance(d.get('id'), str) and 0 < len(d['id']) <= 256 else None
        kind = 'markdown' if d['cell_type'] == 'markdown' else 'prompt' if is_prompt(src) else 'code'
        old = by_id.get(cid)
        same = old is not None and old.source == src and old.kind == kind
        out.append(Cell(_text(src), kind, outputs=old.outputs if old is not None and old.kind == kind else [],
                        cell_id=cid and _text(cid), exec_count=old.exec_count if same else None,
                        origin='file' if same else 'frontend', attachments=old.attachments if old is not None else {},
                        tags=tuple(map(_text, cell_tags(d)))))
    return out
