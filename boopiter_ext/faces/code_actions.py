"""Consent for the model's code: Run and Copy-to-cell buttons under each ```python block of a reply.

Outside auto mode nothing the model writes runs by itself. A block runs when you click its Run
button: in the kernel's namespace, as if you had typed it into a cell, so its output shows under
the block and the next prompt sees it like any cell's. Copy-to-cell hands the code to Jupyter as the
next input (`set_next_input`); from a button, Jupyter inserts it below the next cell you run, so
`%%prompt --insert` is the way to get a reply's code right below the prompt.
"""

__all__ = ['CodeActions']

from html import escape
import ipywidgets as W


class CodeActions:
    "A Run and a Copy-to-cell button, and an output area, for each python block of one reply."
    def __init__(self, shell, blocks:list):
        self.shell, self.blocks, self.outputs, rows = shell, blocks, [], []
        for i,code in enumerate(blocks):
            first = escape(code.strip().splitlines()[0][:60]) if code.strip() else ''
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
