"""The `nbfiles` tool source: read and edit the other notebooks in the notebook's folder, as files on disk.

`read_nb` and `grep_nb` read a notebook's cells; `edit_nb`, `patch_nb_cell`, `insert_cells` and `add_nb_cell` change
them: side effects, run only when the user's own prompt asks for a change (`NB_EDIT_INTENT`, checked by the guards).
A path stays inside the notebook's folder (`paths.confine`) and names an `.ipynb` file under 5 MB that nbformat
validates; the notebook open here is refused (the `notebook` tool source changes it, through the frontend). A hidden
cell (tagged `boop-hide`, or hidden in the open notebook) is not there: never read, searched, edited nor an anchor.
A code cell whose source changes loses its outputs and execution count; a new cell gets a fresh id; a notebook older
than nbformat 4.5 is given ids (`cell-0`, ...: the same at each read, and kept once it is written). A change is written
whole, as nbformat writes it, to a temporary file in the same folder then renamed over the notebook (its mode kept):
a failed write leaves the notebook as it was. `grep_nb`'s pattern runs in a child process killed after `_MAX_SECONDS`:
`re` backtracking cannot be interrupted. Tools answer in text, and problems come back as `error: ...`.

    read_nb, grep_nb, edit_nb, patch_nb_cell, insert_cells, add_nb_cell = nbfile_tools(Path('.'), lambda: open_nb)
    print(grep_nb('analysis.ipynb', r'def \\w+', line_numbers=True))
"""

__all__ = ['nbfile_tools', 'nbfiles_source', 'NB_EDIT_INTENT']

import json, os, re, stat, subprocess, sys, tempfile, uuid
from pathlib import Path
from ..context.build import HIDE_TAG, Hidden, cell_tags
from ..context.nbfile import json_value, load_json
from ..context.paths import confine
from .kernel import _mark
from .notebook import EDIT_INTENT, _changes   # the notebook tools' mark: the same words ask for a change

NB_EDIT_INTENT = EDIT_INTENT   # the user's own words must ask for a change: add, insert, edit, fix, replace, ...
_MAX_BYTES = 5_000_000         # a bigger notebook is refused unread, and never written
_MAX_CELLS, _MAX_MATCHES, _MAX_CHARS, _MAX_OUTPUT = 200, 100, 100_000, 2_000   # what one answer shows at most
_MAX_SOURCE, _MAX_NEW, _MAX_PATTERN, _MAX_SECONDS = 100_000, 50, 1_000, 2.0
_ID = re.compile(r'[a-zA-Z0-9_-]{1,64}')   # nbformat 4.5's cell ids, matched whole
_EXPORT, _EXPORTED = '#| export', re.compile(r'#\|\s*export\b')   # nbdev's pragma, as written here / as nbdev reads it
_CLEARED = '; its outputs and execution count were cleared (they no longer match its source)'

# The child: isolated (`-I -S`: no notebook-folder module is imported), CPU-capped; the lines that match, as JSON
_GREP_CHILD = r'''
import json, re, sys
try: import resource; resource.setrlimit(resource.RLIMIT_CPU, (3, 4))
except Exception: pass
a = json.loads(sys.stdin.buffer.read().decode('utf-8'))
rx, hits = re.compile(a['pattern']), []
for i, src in enumerate(a['sources']):
    hits += [[i, j] for j, line in enumerate(src.splitlines()) if rx.search(line)]
    if len(hits) > a['max']: break
sys.stdout.write(json.dumps(hits[:a['max'] + 1]))
'''


def _src(c)->str:
    s = c.get('source', '')
    return ''.join(s) if isinstance(s, list) else s


def _read(p, path)->bytes|str:
    "The bytes of the regular file `p` under the size cap, or `error: ...`; a FIFO or device is never waited on."
    try:
        with open(os.open(p, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0)), 'rb') as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode): return f'error: {path} is not a regular file'
            data = f.read(min(st.st_size, _MAX_BYTES) + 1)   # not the cap: read(n) allocates n bytes first
    except FileNotFoundError: return f'error: no such notebook: {path}'
    except OSError as e: return f'error: cannot read {path}: {e.strerror or e}'
    return data if len(data) <= _MAX_BYTES else f'error: {path} is over {_MAX_BYTES // 1_000_000} MB, too big to read here'


def _ids(nb)->str:
    "Give cells missing a valid or unique id one (`cell-<index>`), upgrading nbformat 4.0-4.4; a note if any was given."
    old, seen, given = nb.get('nbformat_minor', 0) < 5, set(), False
    for i,c in enumerate(nb['cells']):
        cid = None if old or not isinstance(c, dict) else c.get('id')
        if not (isinstance(cid, str) and _ID.fullmatch(cid)) or cid in seen:
            cid, k, given = f'cell-{i}', 0, True
            while cid in seen: cid, k = f'cell-{i}-{k}', k + 1
            if isinstance(c, dict): c['id'] = cid
        seen.add(cid)
    nb['nbformat_minor'] = max(5, nb.get('nbformat_minor', 0))
    return ' (cells without a unique id were given one: the notebook is nbformat 4.5 now)' if given else ''


def _invalid(nb)->str:
    "Why nbformat finds `nb` invalid, in one line ('' if it is valid)."
    import nbformat
    try: nbformat.validate(nb)
    except nbformat.ValidationError as e: return (str(e).splitlines() or ['?'])[0][:200]
    return ''


def _parse(data, path)->tuple|str:
    "(the notebook file `data` holds, as a NotebookNode with ids, a note on ids given), or `error: ...` in one line."
    import nbformat
    try: nb = json_value(load_json(data.decode('utf-8')))   # every string encodable, nesting bounded
    except ValueError as e: return f'error: {path} is not a notebook: not JSON ({str(e).splitlines()[0][:100]})'
    if not isinstance(nb, dict) or not isinstance(nb.get('cells'), list): return f'error: {path} is not a notebook (no cells)'
    if nb.get('nbformat') != 4 or not isinstance(nb.get('nbformat_minor'), int):
        return f'error: {path} is not an nbformat 4 notebook; open it in Jupyter and save it to upgrade it'
    note, nb = _ids(nb), nbformat.from_dict(nb)
    return (nb, note) if not (why := _invalid(nb)) else f'error: {path} is not a valid notebook: {why}'


def _save(p, nb, path)->str:
    "Write `nb` to `p` as nbformat does, atomically, keeping its mode: '' once written, else `error: ...`."
    import nbformat
    if why := _invalid(nb): return f'error: the change would make {path} invalid ({why}); nothing was written'
    text = nbformat.v4.writes(nb)   # nbformat.write's text (indent 1, sorted keys, sources as lines), validated above
    data = (text if text.endswith('\n') else text + '\n').encode('utf-8')
    if len(data) > _MAX_BYTES: return f'error: {path} would be over {_MAX_BYTES // 1_000_000} MB; nothing was written'
    tmp = None
    try:
        mode = stat.S_IMODE(os.stat(p).st_mode)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f'.{p.name}.', suffix='.tmp')
        with os.fdopen(fd, 'wb') as f: f.write(data); f.flush(); os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException as e:   # an interrupt too: no temporary file is left behind
        if tmp is not None and os.path.lexists(tmp): os.unlink(tmp)
        if not isinstance(e, OSError): raise
        return f'error: cannot write {path}: {e.strerror or e}; it is unchanged'
    return ''


def _outputs(c)->str:
    "A code cell's outputs as text: streams, plain-text results, errors; other kinds named by their types."
    out = []
    for o in c.get('outputs', ()):
        kind, data = o.get('output_type'), o.get('data', {})
        if kind == 'stream': t = _src(dict(source=o.get('text', '')))
        elif kind == 'error': t = f"{o.get('ename', '')}: {o.get('evalue', '')}"
        elif 'text/plain' in data: t = _src(dict(source=data['text/plain']))
        else: t = f"[{', '.join(data) or 'empty'} output]"
        out.append(t.rstrip('\n') if len(t) <= _MAX_OUTPUT else t[:_MAX_OUTPUT] + ' [... cut]')
    return '\n'.join(out)


def _grep(pattern, sources)->list|str:
    "[(source index, line index)] of the lines `pattern` matches (one more than the cap at most), or `error: ...`."
    p = subprocess.Popen([sys.executable, '-I', '-S', '-c', _GREP_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    data = json.dumps(dict(pattern=pattern, sources=sources, max=_MAX_MATCHES)).encode('ascii')
    try: out = p.communicate(data, timeout=_MAX_SECONDS)[0]
    except BaseException as e:   # the deadline, or an interrupt: the child goes
        p.kill(); p.communicate()
        if not isinstance(e, subprocess.TimeoutExpired): raise
        return f'error: the pattern ran over {_MAX_SECONDS:g} s (it backtracks too much); make it simpler'
    try: return [tuple(h) for h in json.loads(out)]
    except ValueError: return 'error: the search failed; make the pattern simpler'


def nbfile_tools(
    root:Path,                        # The notebook's folder: the tools only read and write notebooks under it
    open_file:callable=lambda: None,  # Zero-argument callable: the open notebook's file (refused here), or None
    hidden:callable=Hidden,           # Zero-argument callable: what the open notebook's hidden cells hold
)->list:                              # [read_nb, grep_nb, edit_nb, patch_nb_cell, insert_cells, add_nb_cell]
    "Tools over the notebooks under `root` other than the open one: two read them, four change them on the user's word."
    root = Path(root).resolve()

    def is_open(p):
        try: o = open_file()
        except Exception: o = None
        if not o: return False
        try: return Path(o).resolve() == p or os.path.samefile(o, p)
        except (OSError, TypeError, ValueError): return False

    def load(path)->tuple|str:
        "(file, notebook, its visible cells by id, a note on ids given) for `path`, or `error: ...`."
        if isinstance(p := confine(root, path), str): return p
        if p.suffix.lower() != '.ipynb': return f'error: {path} is not a notebook (an .ipynb file)'
        if is_open(p): return f"error: {path} is the notebook open here; use the `notebook` tool source's tools for it"
        if isinstance(data := _read(p, path), str): return data
        if isinstance(got := _parse(data, path), str): return got
        nb, hid = got[0], hidden()
        seen = {c.id: c for c in nb.cells if HIDE_TAG not in cell_tags(c.get('metadata')) and c.id not in hid.ids
                and _src(c).strip() not in hid.sources}
        return p, nb, seen, got[1]

    def cell(got, path, cell_id):
        if isinstance(got, str): return got
        if not isinstance(cell_id, str) or cell_id not in got[2]: return f'error: no cell with id {cell_id!r} in {path}; read_nb lists them'
        return got[2][cell_id]

    def set_source(got, path, c, new)->str:
        "Give cell `c` source `new` (outputs cleared for a code cell) and write the notebook; what was done."
        if not isinstance(new, str) or len(new) > _MAX_SOURCE: return 'error: the new source must be text of at most 100,000 characters'
        if (new := json_value(new)) == _src(c): return f'cell {c.id} of {path} already holds that source; nothing was written'
        c.source, cleared = new, c.cell_type == 'code' and bool(c.outputs or c.execution_count is not None)
        if c.cell_type == 'code': c.outputs, c.execution_count = [], None
        return _save(got[0], got[1], path) or f'changed cell {c.id} of {path}{_CLEARED if cleared else ""}{got[3]}'

    def add(got, path, where, sources, cell_type='code', export=False, cell_id=None)->str:
        "Insert new cells at index `where` and write the notebook; what was done."
        import nbformat.v4 as v4
        if isinstance(sources, str): sources = [sources]
        if not isinstance(sources, (list, tuple)) or not sources or len(sources) > _MAX_NEW: return f'error: give a list of 1 to {_MAX_NEW} sources'
        if not all(isinstance(s, str) and len(s) <= _MAX_SOURCE for s in sources): return 'error: each source must be text of at most 100,000 characters'
        if cell_type not in ('code', 'markdown', 'raw'): return "error: cell_type is 'code', 'markdown' or 'raw'"
        if export and cell_type != 'code': return 'error: only a code cell can be exported (`#| export`)'
        taken = {c.id for c in got[1].cells}
        if cell_id is not None and not (isinstance(cell_id, str) and _ID.fullmatch(cell_id)):
            return 'error: a cell id is 1 to 64 letters, digits, `-` or `_`'
        if cell_id in taken: return f'error: the id {cell_id!r} is already used in {path}; choose another'
        new = {'code': v4.new_code_cell, 'markdown': v4.new_markdown_cell, 'raw': v4.new_raw_cell}[cell_type]
        cells = []
        for s in map(json_value, sources):
            while (cid := cell_id or uuid.uuid4().hex[:8]) in taken: pass   # a given id is unused (checked above)
            taken.add(cid)
            lead = export and not _EXPORTED.match(s)
            cells.append(new(source=f'{_EXPORT}\n{s}' if lead else s, id=cid))
        got[1].cells[where:where] = cells
        ids = ', '.join(c.id for c in cells)
        return _save(got[0], got[1], path) or f'added {len(cells)} cell{"s" * (len(cells) > 1)} to {path}: {ids}{got[3]}'

    def read_nb(
        path:str,            # Notebook (.ipynb), relative to the notebook's folder
        cell_ids:list=None,  # Only these cells (their ids); None: every cell
        full:bool=False,     # Show each code cell's outputs too, as text
    )->str:                  # Each cell under a `--- cell <id> · <type> ---` line
        "Read the cells of another notebook in the folder: their ids, types and sources"
        if isinstance(got := load(path), str): return got
        seen, want = got[2], [cell_ids] if isinstance(cell_ids, str) else cell_ids
        if want is not None and not isinstance(want, (list, tuple)): return 'error: cell_ids is a list of cell ids'
        if want is not None and (bad := [i for i in want if not isinstance(i, str) or i not in seen]):
            return f'error: no cell with id {bad[0]!r} in {path}; read_nb({path!r}) lists them'
        cells = [c for c in seen.values() if want is None or c.id in want]
        parts = [f'--- cell {c.id} · {c.cell_type} ---\n{_src(c)}' + (f'\n--- outputs ---\n{_outputs(c)}'
                 if full and c.get('outputs') else '') for c in cells[:_MAX_CELLS]]
        text = '\n'.join(parts) if parts else f'({path} has no cells)'
        if len(text) > _MAX_CHARS: text = text[:_MAX_CHARS] + f'\n... cut at {_MAX_CHARS:,} characters; pass cell_ids'
        return text + (f'\n... {len(cells) - _MAX_CELLS} more cells; pass cell_ids' if len(cells) > _MAX_CELLS else '')

    def grep_nb(
        path:str,                 # Notebook (.ipynb), relative to the notebook's folder
        pattern:str,              # Regular expression (Python `re`), searched in each line of each cell's source
        context:int=0,            # Lines to show before and after each matching line (up to 10)
        line_numbers:bool=False,  # Show each line's number in its cell (from 1)
    )->str:                       # `<cell id>: <line>` per matching line (`-` instead of `:` for context lines)
        "Search the cell sources of another notebook in the folder with a regular expression"
        if not isinstance(pattern, str) or not pattern or len(pattern) > _MAX_PATTERN: return 'error: give a pattern of 1 to 1,000 characters'
        try: re.compile(pattern)
        except (re.error, OverflowError, RecursionError, ValueError) as e: return f'error: bad pattern: {e}'
        if not isinstance(context, int) or not 0 <= context <= 10: return 'error: context is a number of lines from 0 to 10'
        if isinstance(got := load(path), str): return got
        cells = list(got[2].values())
        if isinstance(hits := _grep(pattern, [_src(c) for c in cells]), str): return hits
        out, last = [], None
        for i,j in hits[:_MAX_MATCHES]:
            lines = _src(cells[i]).splitlines()
            for k in range(max(0, j - context), min(len(lines), j + context + 1)):
                if last is not None and (i, k) <= last: continue
                if context and last is not None and (i, k - 1) != last: out.append('--')
                sep, last = ':' if k == j or (i, k) in hits else '-', (i, k)
                out.append(f'{cells[i].id}{sep}{f"{k + 1}{sep}" if line_numbers else ""} {lines[k][:200]}')
        more = [f'... stopped at {_MAX_MATCHES} matches; narrow the pattern'] if len(hits) > _MAX_MATCHES else []
        return '\n'.join(out + more) or f'(no line of {path} matches {pattern!r})'

    @_changes
    def edit_nb(
        path:str,     # Notebook (.ipynb), relative to the notebook's folder
        cell_id:str,  # Id of the cell to change (read_nb shows them)
        old_str:str,  # Text the cell's source holds exactly once
        new_str:str,  # Text to put in its place
    )->str:           # What was changed
        "Replace one exact piece of text in a cell of another notebook in the folder"
        if not isinstance(old_str, str) or not old_str or not isinstance(new_str, str): return 'error: old_str and new_str must be text, old_str not empty'
        if isinstance(c := cell(got := load(path), path, cell_id), str): return c
        if (n := _src(c).count(old_str := json_value(old_str))) != 1:
            return f'error: old_str occurs {n} times in cell {cell_id} of {path}; ' + \
                ('read the cell again and copy the text exactly' if n == 0 else 'include more text around it, so it occurs once')
        return set_source(got, path, c, _src(c).replace(old_str, new_str))

    @_changes
    def patch_nb_cell(
        path:str,        # Notebook (.ipynb), relative to the notebook's folder
        cell_id:str,     # Id of the cell to change (read_nb shows them)
        new_source:str,  # The cell's whole new source
    )->str:              # What was changed
        "Replace the whole source of a cell of another notebook in the folder"
        if isinstance(c := cell(got := load(path), path, cell_id), str): return c
        return set_source(got, path, c, new_source)

    @_changes
    def insert_cells(
        path:str,            # Notebook (.ipynb), relative to the notebook's folder
        anchor_id:str,       # Id of the cell the new ones go below
        sources:list,        # The new code cells' sources, in order
        export:bool=False,   # Start each with nbdev's `#| export` line
    )->str:                  # The new cells' ids
        "Insert code cells below a cell of another notebook in the folder"
        if isinstance(c := cell(got := load(path), path, anchor_id), str): return c
        return add(got, path, got[1].cells.index(c) + 1, sources, export=export)

    @_changes
    def add_nb_cell(
        path:str,              # Notebook (.ipynb), relative to the notebook's folder
        source:str,            # The new cell's source
        cell_type:str='code',  # 'code', 'markdown' or 'raw'
        after_id:str=None,     # Id of the cell it goes below; None: at the end
        cell_id:str=None,      # Its id (1 to 64 letters, digits, `-` or `_`, unused in the notebook); None: a new one
        export:bool=False,     # Start it with nbdev's `#| export` line (code cells)
    )->str:                    # The new cell's id
        "Add one cell to another notebook in the folder, at its end or below a cell"
        got = load(path)
        if after_id is not None and isinstance(c := cell(got, path, after_id), str): return c
        if isinstance(got, str): return got
        if not isinstance(source, str): return 'error: source must be text'
        where = len(got[1].cells) if after_id is None else got[1].cells.index(c) + 1
        return add(got, path, where, [source], cell_type, export, cell_id)

    return [_mark(f) for f in (read_nb, grep_nb, edit_nb, patch_nb_cell, insert_cells, add_nb_cell)]


def nbfiles_source(ctx)->list:
    "The `nbfiles` tool source: the notebooks under `ctx.root`, the open one (`ctx.notebook_file`) refused."
    return nbfile_tools(ctx.root, ctx.notebook_file, ctx.hidden)
