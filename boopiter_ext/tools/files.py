"""The `files` tool source: read-only file tools confined to the notebook's folder.

`list_files`, `read_file` and `search_files` take paths relative to the notebook's folder and stay inside it (symlinks
are followed before checking: `paths.confine`); hidden and bulky folders are skipped. A walk stops at its cap or after
`_MAX_SECONDS`, saying where, so a folder of 100,000 files never holds the kernel. Tools answer in text, and problems
come back as `error: ...`. A notebook is read without its hidden cells (`visible_text`): those tagged `boop-hide` in it,
and those hidden in the open notebook (its unsaved view too), found by id or source in any copy; a hidden cell's source
found in any other file is blanked; a notebook that cannot be read as one is refused.

    list_files, read_file, search_files = file_tools(Path('.'), hidden=lambda: hidden_parts(cells))
    print(search_files('TODO', glob='*.py'))
"""

__all__ = ['file_tools', 'visible_text']

import fnmatch, json, os, re, stat, time
from pathlib import Path
from ..context.build import HIDE_TAG, Hidden, cell_tags
from ..context.nbfile import load_json
from ..context.paths import confine
from .kernel import _mark

_SKIP_DIRS = {'__pycache__', 'node_modules', '.git', '.venv'}
_MAX_BYTES = 1_000_000    # read_file refuses, and search_files skips, bigger files
_MAX_LIST, _MAX_MATCHES = 300, 200
_MAX_SECONDS = 2.0   # list_files and search_files stop here and say where: a huge folder never holds the kernel


def _hidden(name): return name.startswith('.') or name in _SKIP_DIRS


def _entries(d):
    "The entries of folder `d` sorted by name; none if it cannot be read (or is no folder)."
    try:
        with os.scandir(d) as it: return sorted(it, key=lambda e: e.name)
    except OSError: return []


def _walk(root, top, deadline):
    """(relative path, path, is_dir) for each entry under `top` a tool may show, depth first and sorted in each folder:
    no hidden or bulky folders, nothing leaving `root`. Past `deadline` it yields (the folder it was in, None, None).
    Paths are strings: a `Path` per entry would cost more than the rest of the walk."""
    stack = [('' if top == root else _rel(root, top) + '/', iter(_entries(top)))]
    while stack:
        rel, it = stack[-1]
        if (e := next(it, None)) is None:
            stack.pop()
            continue
        if time.monotonic() > deadline:
            yield rel or './', None, None
            return
        if _hidden(e.name): continue
        try: link, is_dir = e.is_symlink(), e.is_dir()
        except OSError: continue
        # only a link can lead out of `root` or to a dot-file: other entries of a confined folder stay inside it
        if link and isinstance(confine(root, e.path), str): continue
        yield rel + e.name, e.path, is_dir
        if is_dir and not link: stack.append((rel + e.name + '/', iter(_entries(e.path))))   # a linked folder: listed


def _text(p):
    "The text of `p` if it is a regular file under 1 MB and not binary, else None; a FIFO or device is never opened."
    try:
        if not stat.S_ISREG(os.stat(p).st_mode): return None
        with open(os.open(p, os.O_RDONLY | os.O_NONBLOCK), 'rb') as f:   # swapped for a FIFO since: still no wait
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_BYTES: return None
            data = f.read(st.st_size + 1)   # not `_MAX_BYTES`: read(n) allocates n bytes first
    except OSError: return None
    return None if len(data) > _MAX_BYTES or b'\0' in data[:8192] else data.decode('utf-8', 'replace')


def _source(c):
    src = c.get('source')
    return ''.join(x for x in src if isinstance(x, str)) if isinstance(src, list) else src if isinstance(src, str) else ''


def _notebook(text):
    "The notebook `text` holds (a JSON object with a list of cells), else None."
    if not text.lstrip().startswith('{'): return None   # any JSON object is read: a key may be written `"\u0063ells"`
    try: nb = load_json(text)
    except ValueError: return None
    return nb if isinstance(nb, dict) and isinstance(nb.get('cells'), list) else None


def visible_text(
    text:str,              # A file's text
    hidden:Hidden=None,    # What the open notebook's hidden cells hold (None: none)
    notebook:bool=False,   # The file is a notebook by its name (`.ipynb`): it must read as one
)->str|None:               # The text without hidden cells; None for a notebook that does not read as one
    """A file's text as the model may see it: a notebook without its hidden cells (tagged `boop-hide`, or with the id or
    the source of a hidden cell of the open notebook), any other text with a hidden cell's source blanked."""
    hidden = hidden or Hidden()
    if (nb := _notebook(text)) is not None:
        nb['cells'] = [c for c in nb['cells'] if isinstance(c, dict) and HIDE_TAG not in cell_tags(c.get('metadata'))
                       and c.get('id') not in hidden.ids and _source(c).strip() not in hidden.sources]
        return json.dumps(nb, indent=1, ensure_ascii=False) + '\n'
    if notebook: return None
    for src in hidden.sources:
        for form in (src, json.dumps(src)[1:-1]):
            if form in text: text = text.replace(form, '[a hidden cell]')
    return text


def _numbered(text, start, end):
    "fastcore's `view_file` over text: lines `start` to `end` (1-based; negative counts from the end), numbered."
    lines = text.splitlines()
    if not lines: return ''
    if end is None or end > len(lines): end = len(lines)
    if end < 0: end = len(lines) + end + 1
    if not 1 <= start <= len(lines): return f'error: Invalid start_line {start}. Valid range: 1-{len(lines)}'
    return '\n'.join(f'{i}: {ln}' for i,ln in enumerate(lines[start-1:end], start))


def _matcher(pattern):
    "A test for names matching shell-style `pattern`, compiled once rather than per name; None if it is not a string."
    return re.compile(fnmatch.translate(pattern)).match if isinstance(pattern, str) else None


def _stopped(where, what): return f'... stopped after {_MAX_SECONDS:g} s, in {where}; narrow {what}'


def _rel(root, p): return p.relative_to(root).as_posix()


def _is_notebook(p): return str(p).lower().endswith('.ipynb')


def file_tools(
    root:Path,               # The notebook's folder: every path the tools take is resolved and must stay inside it
    hidden:callable=Hidden,  # Zero-argument callable: what the open notebook's hidden cells hold
)->list:                     # [list_files, read_file, search_files]
    "Read-only file tools confined to `root`; no hidden cell is read through them."
    root = Path(root).resolve()

    def list_files(
        path:str='.',     # Folder, relative to the notebook's folder
        pattern:str='*',  # Shell-style pattern the names must match, e.g. '*.py'
    )->str:               # One path per line, relative to the notebook's folder; folders end with '/'
        "List files and folders under `path`, recursively (hidden and cache folders are skipped)"
        top, match = confine(root, path), _matcher(pattern)
        if isinstance(top, str): return top
        if match is None: return f'error: pattern must be a string, not {type(pattern).__name__}'
        if not top.exists(): return f'error: no such folder: {path}'
        if not top.is_dir(): return f'error: {path} is a file; read_file reads it'
        found = []
        for rel, p, is_dir in _walk(root, top, time.monotonic() + _MAX_SECONDS):
            if p is None: return '\n'.join(found + [_stopped(rel, '`path` or `pattern`')])
            if not match(os.path.basename(p)): continue
            if len(found) == _MAX_LIST:   # one more exists: stop here rather than walk on to count the rest
                return '\n'.join(found + [f'... stopped at {_MAX_LIST} entries; narrow `path` or `pattern`'])
            found.append(rel + ('/' if is_dir else ''))
        return '\n'.join(found) or f'(nothing under {path} matches {pattern!r})'

    def read_file(
        path:str,           # File, relative to the notebook's folder
        start_line:int=1,   # First line to show (1-based)
        end_line:int=None,  # Last line to show; None: to the end
    )->str:                 # The lines, each prefixed with its number
        "Read a text file, with line numbers"
        p = confine(root, path)
        if isinstance(p, str): return p
        if not p.exists(): return f'error: no such file: {path}'
        if p.is_dir(): return f'error: {path} is a folder; list_files lists it'
        if not p.is_file(): return f'error: {path} is not a regular file'
        try: start, end = int(start_line), None if end_line is None else int(end_line)
        except (TypeError, ValueError) as e: return f'error: {e}'
        try:
            if p.stat().st_size > _MAX_BYTES: return f'error: {path} is over 1 MB, too big to read here'
        except OSError as e: return f'error: cannot read {path}: {e.strerror or e}'
        if (text := _text(p)) is None: return f'error: {path} is a binary file'
        if (text := visible_text(text, hidden(), _is_notebook(p))) is None:
            return f'error: {path} is not a notebook that can be read (its hidden cells could not be left out)'
        return _numbered(text, start, end) or '(empty file)'

    def search_files(
        text:str,       # Text to look for (any case; plain text, not a regular expression)
        path:str='.',   # File or folder to search, relative to the notebook's folder
        glob:str='*',   # Shell-style pattern the file names must match, e.g. '*.py'
    )->str:             # One `path:line: text` line per match
        "Search text files for lines containing `text`"
        # plain text on purpose: a regular expression chosen by the model could backtrack for ever, beyond interrupts
        if not isinstance(text, str) or not text: return 'error: give the text to look for'
        want = text.lower()
        top, match = confine(root, path), _matcher(glob)
        if isinstance(top, str): return top
        if match is None: return f'error: glob must be a string, not {type(glob).__name__}'
        if not top.exists(): return f'error: no such file or folder: {path}'
        one, hid = top.is_file() and [(_rel(root, top), str(top), False)], hidden()
        files = one or _walk(root, top, time.monotonic() + _MAX_SECONDS)
        out = []
        for rel, p, is_dir in files:
            if p is None: return '\n'.join(out + [_stopped(rel, '`path` or `glob`')])
            if is_dir or not (one or match(os.path.basename(p))) or (content := _text(p)) is None: continue
            if want not in content.lower(): continue   # most files: one search in C, no loop over their lines
            if (content := visible_text(content, hid, _is_notebook(p))) is None: continue
            for i,line in enumerate(content.splitlines(), 1):
                if want not in line.lower(): continue
                if len(out) == _MAX_MATCHES: return '\n'.join(out + [f'... stopped at {len(out)} matches; narrow it'])
                out.append(f'{rel}:{i}: {line.strip()[:200]}')
        return '\n'.join(out) or f'(no matches for {text!r})'

    return [_mark(list_files), _mark(read_file), _mark(search_files)]
