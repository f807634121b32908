"""Edit this cell: what the model reads to write a code cell anew, and the cell taken back out of its answer.

The model gets the cells above (as context), the cell, and the user's instruction, and is asked for the whole new
cell in one ```python block. Its answer is untrusted text: only that block is kept (the first one; a bare answer with
no block is taken whole), and it goes nowhere but into a diff the user accepts or rejects in the cell.

    msgs = rewrite_messages('add a docstring', 'def f(x): return x', above=['import math'])
    new = rewritten(reply.answer, 'def f(x): return x')
"""

__all__ = ['rewrite_messages', 'rewritten']

from ..context.messages import mk_msg
from ..tools.blocks import python_blocks

_SYSTEM = ("You edit one cell of the user's Jupyter notebook. Answer with the whole new cell in a single ```python "
           "block and nothing else: keep what the instruction does not ask to change, and run nothing.")
_ABOVE_CHARS = 6000   # of the cells above, the newest first


def rewrite_messages(
    instruction:str,  # What the user wants changed, in their words
    source:str,       # The cell as it stands
    above=(),         # The code cells above it, oldest first (hidden ones already left out)
)->list:              # Chat messages
    "The request for the cell's new version: the cells above as context, then the cell and the instruction."
    context, room = [], _ABOVE_CHARS
    for cell in reversed(list(above)):
        if len(cell) > room: break
        context.insert(0, cell)
        room -= len(cell)
    shown = '\n\n'.join(f'```python\n{c}\n```' for c in context) or '(none)'
    return [mk_msg(_SYSTEM, 'system'),
            mk_msg(f'The cells above it:\n\n{shown}\n\nThe cell:\n\n```python\n{source}\n```\n\nInstruction: {instruction}')]


def rewritten(
    answer:str,   # The model's answer
    before:str,   # The cell as it stood
)->str:           # The new cell ('' when the answer holds none, or the same cell again)
    "The cell the answer proposes: its first python block, else its one unlabelled block, else the answer if unfenced."
    answer = answer or ''
    blocks = python_blocks(answer)
    if not blocks and answer.count('```') == 2:   # one block with no language named: the cell all the same
        blocks = python_blocks(answer.replace('```\n', '```python\n', 1))
    new = blocks[0] if blocks else answer if '```' not in answer else ''
    new = (new or '').strip('\n')
    return '' if new.strip() == before.strip() else new
