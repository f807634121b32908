"""The `notebook` tool source: the model reads the notebook's cells, and (through the frontend extension) adds,
edits and deletes them.

Reading works everywhere: the cells come from the notebook as its frontend shows it, else its saved file, with the
outputs they have in this kernel; a hidden cell (`boop-hide`) is not there for the model: not listed, read, searched,
nor a place to add below or edit. Adding, editing and deleting are side effects: the guards run them only when the
user's prompt asked for it. The frontend extension then carries them out in the notebook itself: an added cell
(confirmed first, in auto mode) at once, tagged as the model's; an edit or a deletion once the user accepts its diff,
shown in the cell (that review is the confirmation). The prompt cell then offers to undo its reply's changes as one
step. An edit or a deletion is refused if the cell changed since the model read it: here when the kernel has heard of
the change, else by the page, which is sent the text the model read (`expect`). Without the extension (a terminal, VS
Code, a headless run) they are refused with one line: the `.ipynb` is never written behind a frontend's back.

    tools = notebook_source(cells=lambda: assistant.notebook_cells(), edit=channel.edit)
"""

__all__ = ['notebook_source', 'EDIT_INTENT']

from ..context.build import cell_text, is_hidden, prompt_text, reply_text
from .guards import INTENT_ATTR, REVIEWED_ATTR

EDIT_INTENT = (r'\b(add|insert|append|creat|writ|put|edit|chang|modif|updat|fix|replac|rewrit|renam|refactor|correct|'
               r'amend|improv|delet|remov|drop|clean)\w*')   # the user's own words must ask for a change to the notebook
_NO_FRONTEND = ('error: changing the notebook needs the boopiter extension in JupyterLab or Notebook 7, which carries '
                'the change out in the notebook (Undo reverts it); here the notebook is not changed. Give the user the '
                'cell in your answer instead.')
_MAX_LIST, _MAX_MATCHES, _MAX_SOURCE = 500, 100, 100_000


def _changes(fn):
    "Mark `fn` as a tool with side effects (see `guards.check_call`): it runs only when the user's words ask for it."
    setattr(fn, INTENT_ATTR, EDIT_INTENT)
    return fn


def _reviewed(fn):
    "Mark `fn`'s change as one the user reviews in the cell (a diff to accept or reject): not confirmed before it too."
    setattr(fn, REVIEWED_ATTR, True)
    return fn


def _first_line(c)->str:
    line = next((ln.strip() for ln in (prompt_text(c.source) if c.kind == 'prompt' else c.source).splitlines() if ln.strip()), '')
    return line if len(line) <= 80 else line[:79] + '…'


def notebook_source(
    cells,        # () -> the notebook's `Cell`s in order, as they ran in this kernel else as the notebook holds them
    edit=None,    # edit(request:dict) -> (ok, message), or None without a frontend: carries a change out in the notebook
)->list:          # [list_cells, read_cell, search_notebook, add_cell, edit_cell, delete_cell]
    "The notebook's tools: three that read, three that change it through the frontend."
    seen = {}   # cell id -> its text as the model last read it: an edit must start from that
    def visible(): return [c for c in cells() if not is_hidden(c)]   # a hidden cell is not there, for the model

    def find(cell):
        cs = visible()
        if isinstance(cell, int) and not isinstance(cell, bool):
            return cs[cell] if -len(cs) <= cell < len(cs) else None
        return next((c for c in cs if c.cell_id and c.cell_id == cell), None)   # `None` names no cell without an id

    def list_cells(
        pattern:str='',  # Only cells whose text contains this (any case)
    )->str:              # One `index · id · type · first line` row per cell
        "List the notebook's cells: their index, id, type and first line"
        pat, rows = str(pattern or '').lower(), []
        for i,c in enumerate(visible()):
            if pat and pat not in c.source.lower(): continue
            rows.append(f'{i} · {c.cell_id or "-"} · {c.kind} · {_first_line(c)}')
        if not rows: return '(no cells' + (f' containing {pattern!r})' if pat else ')')
        more = len(rows) - _MAX_LIST
        return '\n'.join(rows[:_MAX_LIST] + ([f'... {more} more; pass a `pattern`'] if more > 0 else []))

    def read_cell(
        cell,   # The cell's id, or its index (0 is the first, -1 the last)
    )->str:     # Its type, id and version, its text, and its outputs
        "Read one cell of the notebook with its outputs"
        c = find(cell)
        if c is None: return f'error: no cell {cell!r}; list_cells shows the ids and indexes'
        if c.cell_id: seen[c.cell_id] = c.source
        head = f'{c.kind} cell {c.cell_id or "(no id)"}'
        if c.kind == 'prompt':
            return f'{head}\nPrompt:\n{prompt_text(c.source)}\n\nReply:\n{reply_text(c) or "(none)"}'
        return f'{head}\n{cell_text(c)[0]}'

    def search_notebook(
        text:str,   # Text to look for (any case; plain text, not a pattern)
    )->str:         # One `index · id · line` row per line that contains it
        "Search every cell of the notebook for lines containing `text`"
        if not isinstance(text, str) or not text: return 'error: give the text to look for'
        want, out = text.lower(), []
        for i,c in enumerate(visible()):
            for line in c.source.splitlines():
                if want not in line.lower(): continue
                if len(out) == _MAX_MATCHES: return '\n'.join(out + [f'... stopped at {_MAX_MATCHES} matches; narrow it'])
                out.append(f'{i} · {c.cell_id or "-"} · {line.strip()[:200]}')
        return '\n'.join(out) or f'(no cell contains {text!r})'

    def _change(request):
        if edit is None or (done := edit(request)) is None: return _NO_FRONTEND
        ok, message = done
        return message if ok else f'error: {message}'

    @_changes
    def add_cell(
        after,                 # Id or index of the cell the new one goes below
        source:str,            # The new cell's text
        cell_type:str='code',  # 'code', 'markdown', or 'prompt' (a `%%prompt` cell)
    )->str:                    # What the notebook did
        "Add a cell below another one in the notebook"
        if cell_type not in ('code', 'markdown', 'prompt'): return "error: cell_type is 'code', 'markdown' or 'prompt'"
        if not isinstance(source, str) or len(source) > _MAX_SOURCE: return 'error: source must be text of at most 100,000 characters'
        c = find(after)
        if c is None or not c.cell_id: return f'error: no cell {after!r} with an id; list_cells shows them'
        if cell_type == 'prompt' and not source.lstrip().startswith('%%prompt'): source = '%%prompt\n' + source
        return _change(dict(op='add', after=c.cell_id, source=source, cell_type='markdown' if cell_type == 'markdown' else 'code'))

    @_reviewed
    @_changes
    def edit_cell(
        cell,         # Id or index of the cell to change (read it with read_cell first)
        source:str,   # The cell's whole new text
    )->str:           # What the notebook did
        "Replace the text of a cell of the notebook"
        if not isinstance(source, str) or len(source) > _MAX_SOURCE: return 'error: source must be text of at most 100,000 characters'
        c = find(cell)
        if c is None or not c.cell_id: return f'error: no cell {cell!r} with an id; list_cells shows them'
        if c.cell_id not in seen: return f'error: read the cell first (read_cell({c.cell_id!r})): edits start from what you read'
        if seen[c.cell_id] != c.source:
            return f'error: cell {c.cell_id} changed since you read it; read it again before editing it'
        # the page checks it too, against what the model read: the user may have typed since, unheard here yet
        return _change(dict(op='edit', cell=c.cell_id, source=source, expect=seen[c.cell_id]))

    @_reviewed
    @_changes
    def delete_cell(
        cell,   # Id or index of the cell to delete (read it with read_cell first)
    )->str:     # What the notebook did
        "Delete a cell of the notebook (the user reviews it first)"
        c = find(cell)
        if c is None or not c.cell_id: return f'error: no cell {cell!r} with an id; list_cells shows them'
        if c.kind == 'prompt': return 'error: a prompt cell holds a reply; the user deletes those themselves'
        if c.cell_id not in seen: return f'error: read the cell first (read_cell({c.cell_id!r})): you delete what you read'
        if seen[c.cell_id] != c.source:
            return f'error: cell {c.cell_id} changed since you read it; read it again before deleting it'
        return _change(dict(op='delete', cell=c.cell_id, expect=seen[c.cell_id]))

    return [list_cells, read_cell, search_notebook, add_cell, edit_cell, delete_cell]
