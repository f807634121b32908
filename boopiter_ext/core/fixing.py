"""From an error to a question about it: the cell that failed, and the prompt that asks why and how to fix it.

    cell = failed_cell(recorder.cells())        # the last cell whose outputs hold an error, or None
    fix_question(cell)                          # 'Cell [3] failed with `KeyError: 'x'`. Why, and how do I fix it? ...'

The failing cell and its traceback reach the model as the notebook above the prompt does (`context/build.py`); the
question only names it, so it reads the same on every rerun of the notebook and its saved reply is shown again.
"""

__all__ = ['failed_cell', 'fix_question', 'failed_source', 'cell_holding', 'ASK']

import linecache

def _error(cell)->dict|None:
    return next((o for o in reversed(cell.outputs) if isinstance(o, dict) and o.get('output_type') == 'error'), None)


def failed_cell(
    cells:list,            # The recorded `Cell`s, in execution order
    exec_count:int=None,   # The failing cell's execution count ([N]); None: the last cell that failed
):                         # The `Cell`, or None if it did not fail (or none did)
    "The cell to ask about: the one that ran as [N], if it failed; else the last one that failed."
    for c in reversed(cells):
        if (exec_count is None or c.exec_count == exec_count) and c.kind != 'prompt' and _error(c) is not None: return c
    return None


ASK = 'Why did it fail, and how do I fix it? Answer briefly, then give the fixed cell whole as one python block.'


def fix_question(cell, ask:str='')->str:
    """The prompt about `cell`'s failure: its error on one line, then `ask` (the user's words), by default `ASK`. A
    failure from before boopiter was loaded (`origin` 'history': no record of its cell's outputs) brings its traceback."""
    err = _error(cell)
    if cell.origin == 'history':
        tb = '\n'.join(str(t) for t in (err.get('traceback') or [])[-12:])[-3000:]
        return (f'The last cell that failed before boopiter was loaded failed with this error:\n\n```\n{tb}\n```\n\n'
                + (ask or ASK))
    what = ' '.join(f'{err.get("ename") or "Error"}: {err.get("evalue") or ""}'.replace('`', "'").split())
    what = what if len(what) <= 200 else what[:199] + '…'
    where = f'Cell [{cell.exec_count}]' if cell.exec_count else 'The cell above'
    return f'{where} failed with `{what}`.' + (f'\n\n{ask}' if ask else ' ' + ASK)


def failed_source(
    err:BaseException,   # An exception a cell raised (`sys.last_value`)
)->str:                  # The source of the cell it came from, as IPython cached it; '' if not known
    "The text of the cell that raised `err`: its outermost module frame's lines, which IPython keeps in `linecache`."
    tb = err.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == '<module>' and (lines := linecache.getlines(code.co_filename)): return ''.join(lines)
        tb = tb.tb_next
    return ''


def cell_holding(
    source:str,   # A cell's text
    cells:list,   # The notebook's `Cell`s
)->str|None:      # The id of the one code cell holding exactly `source`; None if none does, or several
    "Which cell of the notebook a failure came from, by its text (a failure from before boopiter recorded cells)."
    ids = [c.cell_id for c in cells if c.kind == 'code' and c.cell_id and source.strip() and c.source.strip() == source.strip()]
    return ids[0] if len(ids) == 1 else None
