"""Ghost text and "Edit this cell", in JupyterLab 4 and Notebook 7 with the real extension: typing in a code cell brings
the completion model's ghost text through JupyterLab's own inline completer, Tab accepts it, and it keeps coming while
another cell runs (the kernel answers from a thread); "Edit this cell" asks for an instruction and shows the model's
version of the cell as a diff, which Accept makes in one undo step. Harness: tests/browser.py."""

import json, time
import nbformat, pytest
from browser import PANEL, both_apps, cells, load_boopiter, open_notebook, run_cell, screenshot, until, \
    write_notebook
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)
from ollama_server import CODER, DEFAULT_REPLY, normalize_model

pytestmark = pytest.mark.slow

SOURCES = f'{PANEL}.content.widgets.map(c => c.model.sharedModel.getSource())'
GHOST = '.jp-GhostText'


@pytest.fixture
def coder(srv):
    "The test server also holds a small code model that fills in the middle; each completion answers by its prefix."
    srv.models.append(normalize_model(CODER))
    def answer(body):
        if body.get('suffix') is None: return DEFAULT_REPLY
        return {'return': ' a + b', 'add(1, ': '2)'}.get(next((k for k in ('add(1, ', 'return') if
                                                            body['prompt'].rstrip(' ').endswith(k.rstrip(' '))), ''), '')
    srv.responder = answer
    yield srv
    srv.responder = None
    srv.models.remove(next(m for m in srv.models if m['name'] == CODER['name']))


def type_at_end(page, index, text):
    "Click into cell `index`'s editor, go to its end, and type `text` as a user does."
    editor = cells(page).nth(index).locator('.cm-content')
    editor.click()
    page.keyboard.press('Control+End')
    page.keyboard.type(text, delay=30)


@both_apps
def test_ghost_text_comes_as_you_type_tab_accepts_it_and_it_comes_while_a_cell_runs(app, page, coder, artifacts):
    hidden = nbformat.v4.new_code_cell("token = 'hunter2'", metadata={'tags': ['boop-hide']})   # hidden from the model
    path = write_notebook(app.root/f'ghost-{app.app}.ipynb', ['import time', 'def add(a, b):\n    ', 'x = 1', hidden])
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    type_at_end(page, 1, 'return')
    t = time.monotonic()
    until(page, app, f"document.querySelector('{GHOST}')?.textContent.includes('a + b')", 'the ghost text', timeout=30)
    shown_in = time.monotonic() - t
    ghost = page.locator(GHOST).first
    screenshot(cells(page).nth(1), artifacts/f'{app.app}-ghost-text.png', min_size=(300, 30, 2000))
    page.keyboard.press('Tab')   # JupyterLab's own key accepts it
    until(page, app, f"{SOURCES}[1] === 'def add(a, b):\\n    return a + b'", 'the ghost text accepted')
    assert not ghost.is_visible()
    sent = coder.generations()[-1]
    assert sent['model'] == CODER['name'] and sent['prompt'].endswith('def add(a, b):\n    return') and 'import time' in sent['prompt']
    type_at_end(page, 3, '\nprint(tok')   # in the hidden cell: nothing is asked
    page.wait_for_timeout(1000)
    assert all('hunter2' not in json.dumps(g) for g in coder.generations())
    # while another cell runs (a sleep holds the kernel's main thread), ghost text still comes
    page.evaluate(f"() => {{ {PANEL}.content.widgets[0].model.sharedModel.setSource('import time\\ntime.sleep(30)'); }}")
    run_cell(page, 0)
    sleeping = f"{PANEL}.content.widgets[0].promptNode.textContent.includes('*')"   # JupyterLab's [*]: still running
    until(page, app, sleeping, 'the sleep running')
    type_at_end(page, 2, '\ny = add(1, ')
    until(page, app, f"document.querySelector('{GHOST}')?.textContent.includes('2)')", 'ghost text while a cell runs',
          timeout=20)
    assert page.evaluate(f'() => {sleeping}')   # the sleep still runs: it never held the completion up
    print(f'{app.app}: ghost text {shown_in * 1000:.0f} ms after the last keystroke (debounce and model included)')
    page.keyboard.press('Escape')
    page.evaluate(f'async () => {{ await {PANEL}.sessionContext.session.kernel.interrupt(); }}')
    until(page, app, f"JSON.stringify({PANEL}.content.widgets[0].model.outputs.toJSON()).includes('KeyboardInterrupt')",
          'the sleep interrupted (it was running all along)')


@both_apps
def test_edit_this_cell_shows_the_models_version_as_a_diff_and_accept_makes_it_in_one_undo_step(app, page, srv, artifacts):
    before = 'def add(a, b):\n    return a + b'
    after = 'def add(a, b):\n    "Add two numbers."\n    return a + b'
    path = write_notebook(app.root/f'edit-{app.app}.ipynb', ['import math', before])
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    cells(page).nth(1).locator('.cm-content').click()
    srv.script(f'Here it is:\n\n```python\n{after}\n```')
    page.keyboard.press('Escape')   # command mode, on that cell
    page.keyboard.press('Control+Alt+e')   # the key; the command is also in the palette and the cell's context menu
    dialog = page.locator('.jp-Dialog')
    dialog.locator('input').fill('add a docstring')
    dialog.locator('.jp-mod-accept').click()
    review = cells(page).nth(1).locator('.boop-Review')
    review.wait_for(timeout=30_000)
    rows = review.locator('.boop-Review-line').all_inner_texts()
    assert rows == ['  def add(a, b):', '+     "Add two numbers."', '      return a + b'], rows
    asked = json.dumps(srv.last_chat()['messages'])
    assert 'add a docstring' in asked and 'import math' in asked and 'return a + b' in asked
    screenshot(review, artifacts/f'{app.app}-edit-cell-review.png', min_size=(300, 60, 2000))
    review.get_by_role('button', name='Accept').click()
    until(page, app, f"{SOURCES}[1] === {json.dumps(after)}", 'the new version in the cell')
    page.evaluate(f'() => {PANEL}.content.widgets[1].model.sharedModel.undo()')   # one step back
    until(page, app, f"{SOURCES}[1] === {json.dumps(before)}", 'the edit undone in one step')
