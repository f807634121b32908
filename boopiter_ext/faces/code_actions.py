"""Consent for the model's code: Run and Copy-to-cell buttons under each ```python and shell block of a reply.

Outside auto mode nothing the model writes runs by itself. A block runs when you click its Run
button: in the kernel's namespace, as if you had typed it into a cell, so its output shows under
the block and the next prompt sees it like any cell's. Copy-to-cell hands the code to Jupyter as the
next input (`set_next_input`); from a button, Jupyter inserts it below the next cell you run, so
`%%prompt --insert` is the way to get a reply's code right below the prompt. A shell block comes as the `%%bash`
cell that runs it (`tools/blocks.py` `cell_source`); a block in any other language gets no buttons: it would not run.

Buttons are offered only where someone can click them: a headless run (nbclient, papermill, `boopiter-run`) would
save widgets nobody can use, which read as placeholder text once the kernel is gone. `clickable` tells the two apart
from the request being run (`nonblocking.md` section 2): a frontend sends its cell's id (`cellId`: JupyterLab,
Notebook 7, VS Code) or lets the kernel ask for input (`allow_stdin`: the classic notebook, a console); nbclient
and papermill send neither.
"""

__all__ = ['CodeActions', 'clickable']

from html import escape


def clickable(shell)->bool:
    "Whether the cell now running was sent by a frontend where a user can click (not a headless runner)."
    kernel = getattr(shell, 'kernel', None)
    try: parent = kernel.get_parent() if kernel is not None else None
    except Exception: return True   # another kernel's API: offer the buttons as before
    if not isinstance(parent, dict) or not parent: return kernel is not None
    content, md = parent.get('content') or {}, parent.get('metadata') or {}
    return bool(content.get('allow_stdin') or md.get('cellId'))


class CodeActions:
    "A Run and a Copy-to-cell button, and an output area, for each block of one reply (as the cell that runs it)."
    def __init__(self, shell, blocks:list):
        import ipywidgets as W
        self.shell, self.blocks, self.outputs, rows = shell, blocks, [], []
        for i,code in enumerate(blocks):
            lines = code.removeprefix('%%bash\n').strip().splitlines()
            first = escape(lines[0][:60]) if lines else ''
            run = W.Button(description='Run', icon='play', tooltip='Run this block in the kernel, as a cell would',
                           layout=W.Layout(width='80px'))
            copy = W.Button(description='Copy to cell', icon='copy', layout=W.Layout(width='120px'),
                            tooltip='Insert this block as a new cell (below the next cell you run)')
            out = W.Output()
            run.on_click(lambda _, i=i: self.run(i))
            copy.on_click(lambda _, i=i: self.copy(i))
            label = W.HTML(f'<code style="opacity:.7">block {i + 1}: {first}</code>')
            rows.append(W.VBox([W.HBox([run, copy, label]), out]))
            self.outputs.append(out)
        self.widget = W.VBox(rows)
        self.widget.add_class('boopiter-code-actions')

    def run(self, i:int):
        "Run block `i` in the kernel's namespace; its output goes under the block (and into the context)."
        self.outputs[i].clear_output()   # a second click shows the second run, not both
        with self.outputs[i]: self.shell.run_cell(self.blocks[i], store_history=True)   # a cell in history and context

    def copy(self, i:int):
        "Hand block `i` to Jupyter as the next input."
        self.shell.set_next_input(self.blocks[i])
        with self.outputs[i]: print('It will be inserted after the next cell you run; '
                                    '`%%prompt --insert` puts code right below the prompt.')
