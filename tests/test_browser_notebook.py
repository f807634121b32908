"""The whole notebook as context, from the frontend (issue 14), in JupyterLab 4 and Notebook 7 (headless Chromium).

The eye and the pin on a cell set its `boop-hide` / `boop-pin` tags; a hidden cell's text never reaches the model
(the ledger lists it hidden); unsaved edits do; the dry run shows in a dialog what a prompt would send and sends
nothing; the model's notebook tools change the notebook only after the user says yes in the page's input box, and
the notebook's Undo reverts each change. Harness: tests/browser.py.
"""

import json
import pytest
from browser import (KERNEL, KERNEL_STATUS, PANEL, both_apps, cells, in_both_themes, load_from_menu, open_notebook, read,
                     reply, reply_done, run_all, run_cell, save, until, wait_for_chat, write_notebook)
from browser import app, chromium, lab, nb7, page, artifacts  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow
SECRET = 'The launch code is Mars-7.'
OLD_NOTE, NEW_NOTE = 'Old note: nothing yet.', 'New note: the answer is 42.'
CELLS = [f'# Secret plan\n{SECRET}', 'x = 6 * 7', f'# Notes\n{OLD_NOTE}', '%%prompt\nWhat do you know so far?']
SECRET_CELL, CODE_CELL, NOTE_CELL, PROMPT = range(4)
TAGS = f"{PANEL}.content.widgets.map(c => c.model.getMetadata('tags') ?? [])"
MARKS = """c => Object.fromEntries(Array.from(c.querySelectorAll('.boop-CellMark'), b => [b.dataset.boopMark,
    [b.getAttribute('aria-pressed'), b.getAttribute('aria-label')]]))"""
DIALOG = '.boop-DryRunDialog'


# what the page last told the kernel the notebook is (the `notebook` comm message)
WATCH_SENT = f"""() => {{ window.__sent = null; {KERNEL}.anyMessage.connect((_, a) => {{ const d = a.msg.content?.data;
    if (a.direction === 'send' && a.msg.header.msg_type === 'comm_msg' && d?.type === 'notebook') window.__sent = d.cells; }}); }}"""


def mark(page, cell, which):
    "Click the eye ('hide') or the pin ('pin') of `cell`, as a user does: they show on hover."
    c = cells(page).nth(cell)
    c.hover()
    c.locator(f'.boop-CellMark[data-boop-mark="{which}"]').click()


@both_apps
def test_hidden_cells_never_reach_the_model_unsaved_edits_do_and_the_dry_run_sends_nothing(app, page, srv, artifacts):
    path = write_notebook(app.root/'context.ipynb', CELLS)
    open_notebook(page, app, path.name)
    load_from_menu(page, app)
    page.evaluate(WATCH_SENT)

    mark(page, SECRET_CELL, 'hide')                                      # the eye: never sent to the model
    mark(page, CODE_CELL, 'pin')                                         # the pin: never dropped to fit
    until(page, app, f"JSON.stringify({TAGS}) === '[[\"boop-hide\"],[\"boop-pin\"],[],[]]'", 'the tags set')
    assert cells(page).nth(SECRET_CELL).evaluate(MARKS) == {'hide': ['true', 'Hide from the model'],
                                                            'pin': ['false', "Pin in the model's context"]}
    assert cells(page).nth(CODE_CELL).evaluate(MARKS)['pin'][0] == 'true'
    assert cells(page).nth(SECRET_CELL).evaluate("c => c.classList.contains('boop-mod-hidden')")   # dimmed at a glance

    cells(page).nth(NOTE_CELL).locator('.jp-MarkdownOutput').click()    # an edit, not saved, not even rendered
    page.keyboard.press('Enter')
    until(page, app, f"{PANEL}.content.mode === 'edit' && {PANEL}.content.activeCellIndex === {NOTE_CELL}", 'editing the note')
    page.keyboard.press('Control+a')
    page.keyboard.type(f'# Notes\n{NEW_NOTE}')
    page.keyboard.press('Escape')
    assert NEW_NOTE not in read(path).cells[NOTE_CELL].source and page.evaluate(f'() => {PANEL}.model.dirty')
    until(page, app, f"JSON.stringify(window.__sent ?? null).includes({json.dumps(NEW_NOTE)}) && "
                     "window.__sent[0].tags.includes('boop-hide')", 'the kernel told of the edit and the tags')

    cells(page).nth(PROMPT).click()                                      # the dry run, from the cell toolbar
    page.locator(f'.jp-Cell .jp-cell-toolbar [data-jp-item-name="boopiter-dry-run"] :is(button, jp-button)').first.click()
    until(page, app, f"document.querySelector('{DIALOG} .boop-DryRun')?.dataset.state === 'done'", 'the dry run')
    shown = page.locator(DIALOG).inner_text()
    assert 'Dry run: nothing was sent. Model: ' in shown and NEW_NOTE in shown, shown
    assert SECRET not in shown and OLD_NOTE not in shown and '1 hidden' in shown, shown
    page.keyboard.press('Escape')
    until(page, app, f"!document.querySelector('{DIALOG}')", 'the dialog closed')
    assert srv.chats() == []                                             # nothing went to a model

    srv.script('You multiplied 6 by 7; your note says the answer is 42.')
    run_cell(page, PROMPT)
    wait_for_chat(app, srv, 1)
    until(page, app, reply_done(PROMPT), 'the reply')
    sent = json.dumps(srv.last_chat())
    assert 'Mars-7' not in sent and 'Secret plan' not in sent, sent     # the hidden cell: not a word of it
    assert NEW_NOTE in sent and OLD_NOTE not in sent and 'x = 6 * 7' in sent, sent
    details = reply(page, PROMPT).locator('.boop-Reply-details li').all_text_contents()   # (collapsed)
    assert any(d.startswith('Context: ') and '1 hidden' in d for d in details), details
    assert [d.strip() for d in details if d.strip().endswith('· hidden')] == ['Markdown note · ~0 tokens · hidden'], details
    in_both_themes(page, app, artifacts, f'{app.app}-cell-marks', lambda: page.locator('.jp-Notebook'), (500, 200, 5000))
    save(page)
    saved = read(path)
    assert saved.cells[SECRET_CELL].metadata['tags'] == ['boop-hide'] and saved.cells[CODE_CELL].metadata['tags'] == ['boop-pin']
    assert saved.cells[NOTE_CELL].source == f'# Notes\n{NEW_NOTE}'


TOTAL = 'total = 1234 * 2'
ASK = '%%prompt --auto\nPlease fix the total cell (it should be 1234 * 3) and add a cell that prints it.'
EDIT_CELLS = ['%boop tools notebook on', TOTAL, ASK]
TOTAL_CELL, ASK_CELL = 1, 2
SOURCES = f"{PANEL}.content.widgets.map(c => c.model.sharedModel.getSource())"
STDIN = '.jp-Stdin-input'


def answer_stdin(page, app, question, answer='y'):
    "Answer the kernel's input() in the box the notebook shows under the running cell."
    until(page, app, f"Array.from(document.querySelectorAll('.jp-Stdin-prompt'), p => p.innerText).some(t => t.startsWith({json.dumps(question)}))"
                     f" && document.querySelector('{STDIN}')", f'the question {question!r}')
    box = page.locator('.jp-Stdin-prompt').filter(has_text=question).locator(STDIN)
    box.fill(answer)
    box.press('Enter')


@both_apps
def test_a_notebook_tool_edit_waits_for_yes_in_the_page_and_undo_reverts_it(app, page, srv):
    path = write_notebook(app.root/'edits.ipynb', EDIT_CELLS)
    open_notebook(page, app, path.name)
    load_from_menu(page, app)
    cid = page.evaluate(f'() => {PANEL}.content.widgets[{TOTAL_CELL}].model.id')
    srv.script(f'```python\nread_cell("{cid}")\nedit_cell("{cid}", "total = 1234 * 3")\nadd_cell("{cid}", "print(total)")\n```')
    srv.script('Fixed, and a cell prints it.')
    run_all(page, app)
    answer_stdin(page, app, f"Run edit_cell(cell='{cid}', source='total = 1234 * 3')? [y/N]")
    until(page, app, f"{SOURCES}[{TOTAL_CELL}] === 'total = 1234 * 3'", 'the edit, once the user said yes')
    assert page.evaluate(f'() => {SOURCES}.length') == 3                 # the add waits for its own yes
    answer_stdin(page, app, f"Run add_cell(after='{cid}', source='print(total)')? [y/N]")
    wait_for_chat(app, srv, 2)
    until(page, app, f"{KERNEL_STATUS} === 'idle' && {PANEL}.content.widgets.length === 4 && "
                     f"{PANEL}.content.widgets[3].model.executionCount", 'the prompt done')
    assert page.evaluate(f'() => {SOURCES}') == [EDIT_CELLS[0], 'total = 1234 * 3', 'print(total)', ASK]
    told = srv.last_chat()['messages'][-1]['content']
    assert 'done: replaced the text of cell' in told and 'done: added a code cell' in told, told
    assert page.evaluate(f'() => {PANEL}.content.widgets[{TOTAL_CELL + 1}].model.executionCount') is None   # added, not run

    cells(page).nth(0).click()                                           # the notebook's Undo (Z in command mode)
    page.keyboard.press('Escape')
    page.keyboard.press('z')
    until(page, app, f'{SOURCES}.length === 3', 'the added cell undone')
    page.keyboard.press('z')
    until(page, app, f"{SOURCES}[{TOTAL_CELL}] === {json.dumps(TOTAL)}", 'the edit undone')
    assert page.evaluate(f'() => {SOURCES}') == EDIT_CELLS
    save(page)
    assert [c.source for c in read(path).cells] == EDIT_CELLS


@both_apps
def test_the_dry_run_right_after_an_edit_shows_the_edit(app, page, srv):
    path = write_notebook(app.root/'quick.ipynb', CELLS)
    open_notebook(page, app, path.name)
    load_from_menu(page, app)
    page.evaluate(f"""() => {{ const nb = {PANEL}.content;
        nb.widgets[{NOTE_CELL}].model.sharedModel.setSource({json.dumps('# Notes' + chr(10) + NEW_NOTE)});
        nb.activeCellIndex = {PROMPT};
        window.jupyterapp.commands.execute('boopiter:dry-run'); }}""")   # an edit, then at once a dry run
    until(page, app, f"document.querySelector('{DIALOG} .boop-DryRun')?.dataset.state === 'done'", 'the dry run')
    shown = page.locator(DIALOG).inner_text()
    assert NEW_NOTE in shown and OLD_NOTE not in shown, shown
