"""Finding the open notebook's file and reading its saved cells, without ever writing it.

Where the path comes from, first found wins:

1. `__vsc_ipynb_file__` in the user namespace (VS Code sets it after start-up, so it is read lazily);
2. `JPY_SESSION_NAME` in the environment, or `__session__` (Jupyter Server, ipykernel >= 6.21.2);
3. `BOOPITER_NOTEBOOK` in the environment (set it for nbclient, papermill and `jupyter execute`).

The file is read with the stdlib `json` module rather than nbformat: importing nbformat pulls in
jsonschema's format checkers, measured at 1.7 s in a JupyterLab environment, and a prompt only needs
the cells. Reads are cached until the file changes.
"""

__all__ = ['notebook_path', 'saved_cells']

import json, os
from pathlib import Path
from .context import Cell, is_prompt

_cache = {}


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


def _output(o):
    "An output as the context builder reads it: malformed metadata or data emptied, a non-dict dropped."
    if not isinstance(o, dict): return None
    o = {**o, 'metadata': o['metadata'] if isinstance(o.get('metadata'), dict) else {}}
    if 'data' in o and not isinstance(o['data'], dict): o['data'] = {}
    return o


def _cell(c):
    src = c.get('source', '')
    src = ''.join(map(str, src)) if isinstance(src, list) else src if isinstance(src, str) else ''
    kind = 'markdown' if c.get('cell_type') == 'markdown' else 'prompt' if is_prompt(src) else 'code'
    outs = c.get('outputs') if isinstance(c.get('outputs'), list) else []
    cid, count, att = c.get('id'), c.get('execution_count'), c.get('attachments')
    return Cell(src, kind, outputs=[o for o in map(_output, outs) if o], cell_id=cid if isinstance(cid, str) else None,
                exec_count=count if isinstance(count, int) else None, origin='file',
                attachments=att if isinstance(att, dict) else {})


def saved_cells(
    path:Path,  # A notebook file
)->list|None:   # Its code and Markdown cells, or None if it cannot be read
    "The cells of the saved notebook at `path` (raw cells skipped), cached until the file changes."
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
        if (cells := _cache.get(key)) is None:   # one file cached; readers on other threads may race: harmless
            raw = json.loads(path.read_text(encoding='utf-8')).get('cells', [])
            cells = [_cell(c) for c in raw if isinstance(c, dict) and c.get('cell_type') in ('code', 'markdown')]
            _cache.clear()
            _cache[key] = cells
        return cells
    except (OSError, ValueError, AttributeError, TypeError): return None   # unreadable: treated as unknown
