"""The whole notebook as context, from the frontend (issue 14), in JupyterLab 4 and Notebook 7 (headless Chromium).

The eye and the pin on a cell set its `boop-hide` / `boop-pin` tags; a hidden cell's text never reaches the model
(the ledger lists it hidden); unsaved edits do; the dry run shows in a dialog what a prompt would send and sends
nothing; the model's notebook tools change the notebook only once the user agrees: an edit or a deletion is a diff in
the cell to accept or reject, an added cell waits for a yes in the page's input box; the prompt cell's Undo reverts
all its reply's changes at once; and an edit the model makes from what it read before the user typed in the cell is
refused by the page, nothing overwritten. `%%prompt --dry-run` in a cell reads as the dialog does, its messages folded;
Stop ends a reply as stopped, and nothing else: no error in the cell, its file or a Run All; a `bash` block is inserted
as the `%%bash` cell that runs it, and a block no kernel cell runs is offered for Copy only (issue 22.4).
Harness: tests/browser.py.
"""

import json
import pytest
from browser import (KERNEL, KERNEL_STATUS, OUTPUT_TEXTS, PANEL, REPLY_MIME, both_apps, cells, in_both_themes,
                     load_boopiter, open_notebook, read, reply, reply_done, run_all, run_cell, save, saved_reply, screenshot, until,
                     wait_all_ran, wait_for_chat, write_notebook)
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)

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
    load_boopiter(page, app)
    run_cell(page, CODE_CELL)                                            # a cell that never ran adds nothing (22.2)
    until(page, app, f"{PANEL}.content.widgets[{CODE_CELL}].model.executionCount && {KERNEL_STATUS} === 'idle'", 'x set')
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
    page.locator('.jp-Cell .jp-cell-toolbar [data-jp-item-name="boopiter-dry-run"] :is(button, jp-button)').first.click()
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


def wait_for_stdin(page, app, question, why=None):
    "Wait until the kernel's input() asks `question` in the box the notebook shows under the running cell."
    until(page, app, f"Array.from(document.querySelectorAll('.jp-Stdin-prompt'), p => p.innerText).some(t => t.startsWith({json.dumps(question)}))"
                     f" && document.querySelector('{STDIN}')", why or f'the question {question!r}')


def answer_stdin(page, app, question, answer='y'):
    "Answer the kernel's input() in the box the notebook shows under the running cell."
    wait_for_stdin(page, app, question)
    box = page.locator('.jp-Stdin-prompt').filter(has_text=question).locator(STDIN)
    box.fill(answer)
    box.press('Enter')


def open_edits(page, app, name):
    "`EDIT_CELLS` as notebook `name`, open with boopiter loaded: (its path, the id of the cell the model edits)."
    path = write_notebook(app.root/name, EDIT_CELLS)
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    return path, page.evaluate(f'() => {PANEL}.content.widgets[{TOTAL_CELL}].model.id')


def review_in(page, cell):
    "The review shown in `cell`, once there: (its locator, its diff's rows)."
    review = cells(page).nth(cell).locator('.boop-Review')
    review.wait_for(timeout=60_000)
    return review, review.locator('.boop-Review-line').all_inner_texts()


@both_apps
def test_a_notebook_tool_edit_is_reviewed_as_a_diff_and_the_prompts_undo_reverts_what_its_reply_changed(app, page, srv):
    path, cid = open_edits(page, app, 'edits.ipynb')
    first = page.evaluate(f'() => {PANEL}.content.widgets[0].model.id')
    srv.script(f'```python\nread_cell("{cid}")\nedit_cell("{cid}", "total = 1234 * 3")\nadd_cell("{cid}", "print(total)")\n'
               f'read_cell("{first}")\ndelete_cell("{first}")\n```')
    srv.script('Fixed, and a cell prints it.')
    run_all(page, app)
    review, rows = review_in(page, TOTAL_CELL)                           # the edit: a diff in the cell, no yes asked
    assert rows == [f'- {TOTAL}', '+ total = 1234 * 3'], rows
    assert page.evaluate(f'() => {SOURCES}') == EDIT_CELLS               # nothing changed before the user says so
    review.get_by_role('button', name='Accept').click()
    until(page, app, f"{SOURCES}[{TOTAL_CELL}] === 'total = 1234 * 3'", 'the edit, once accepted')
    assert page.evaluate(f'() => {SOURCES}.length') == 3                 # the add waits for its own yes
    answer_stdin(page, app, f"Run add_cell(after='{cid}', source='print(total)')? [y/N]")
    review, rows = review_in(page, 0)                                    # the deletion: the whole cell, removed
    assert rows == [f'- {EDIT_CELLS[0]}'] and review.get_by_role('button', name='Delete the cell').count() == 1, rows
    review.get_by_role('button', name='Reject').click()
    wait_for_chat(app, srv, 2)
    until(page, app, f"{KERNEL_STATUS} === 'idle' && {PANEL}.content.widgets.length === 4 && "
                     f"{PANEL}.content.widgets[3].model.executionCount", 'the prompt done')
    assert page.evaluate(f'() => {SOURCES}') == [EDIT_CELLS[0], 'total = 1234 * 3', 'print(total)', ASK]
    told = srv.last_chat()['messages'][-1]['content']
    assert 'done: replaced the text of cell' in told and 'done: added a code cell' in told, told
    assert 'refused: the user rejected the change' in told, told
    assert page.evaluate(f'() => {PANEL}.content.widgets[{TOTAL_CELL + 1}].model.executionCount') is None   # added, not run
    assert 'boop-mod-model' in cells(page).nth(TOTAL_CELL + 1).get_attribute('class')   # the model's cell, marked

    bar = page.locator('.boop-Changes')                                  # the prompt's Undo: its reply's changes, at once
    assert cells(page).nth(3).locator('.boop-Changes').count() == 1      # on the prompt cell
    assert 'changed the notebook 2 times' in bar.inner_text()
    bar.get_by_role('button', name='Undo all').click()
    until(page, app, f"{SOURCES}.length === 3 && {SOURCES}[{TOTAL_CELL}] === {json.dumps(TOTAL)}", 'both changes undone')
    assert page.evaluate(f'() => {SOURCES}') == EDIT_CELLS and bar.inner_text() == 'Undone: 2 changes.'
    save(page)
    assert [c.source for c in read(path).cells] == EDIT_CELLS


# the page's `notebook` messages held back: the kernel has not heard of what the user typed (as within the page's
# half-second before it tells the kernel, or while the comm is slow), so only the page can tell the cell changed
HOLD_CELLS = f"""() => {{ const k = {KERNEL}; const send = k.sendShellMessage.bind(k); window.__held = [];
    k.sendShellMessage = (msg, ...rest) => {{ if (msg.header.msg_type === 'comm_msg' && msg.content?.data?.type === 'notebook') {{
        window.__held.push(msg); return undefined; }} return send(msg, ...rest); }}; }}"""
TYPED = TOTAL + '  # checked by hand'


@both_apps
def test_an_edit_from_what_the_model_read_before_the_user_typed_is_refused_by_the_page(app, page, srv):
    path, cid = open_edits(page, app, 'stale.ipynb')
    # the add's yes is the pause in which the user types: between the model's read and its edit
    srv.script(f'```python\nread_cell("{cid}")\nadd_cell("{cid}", "print(total)")\nedit_cell("{cid}", "total = 1234 * 3")\n```')
    srv.script('The cell changed since I read it, so I left it as you wrote it.')
    run_all(page, app)
    question = f"Run add_cell(after='{cid}', source='print(total)')? [y/N]"
    wait_for_stdin(page, app, question, 'the model read the cell; its add waits for a yes')
    page.evaluate(HOLD_CELLS)
    editor = cells(page).nth(TOTAL_CELL).locator('.cm-content')         # the user types into the cell meanwhile
    editor.click()
    page.keyboard.press('Control+End')
    page.keyboard.type('  # checked by hand')
    until(page, app, f"{SOURCES}[{TOTAL_CELL}] === {json.dumps(TYPED)}", 'the typing')
    # the page has told the kernel of the typing (within its half-second), and that message is held: the kernel has
    # not heard when the edit comes (answered sooner, the yes raced the page's timer)
    until(page, app, 'window.__held.length >= 1', "the page's news of the typing, held")
    answer_stdin(page, app, question)
    wait_for_chat(app, srv, 2)
    until(page, app, f"{KERNEL_STATUS} === 'idle' && {PANEL}.content.widgets[{ASK_CELL + 1}].model.executionCount", 'the prompt done')
    assert page.evaluate(f'() => {SOURCES}') == [EDIT_CELLS[0], TYPED, 'print(total)', ASK]   # the typing kept, not overwritten
    assert page.locator('.boop-Review').count() == 0                     # refused at once: nothing to review
    told = srv.last_chat()['messages'][-1]['content']
    assert f'refused: cell {cid} changed since the model read it (the user edited it)' in told, told   # the page's words
    assert page.evaluate('() => window.__held.length') >= 1             # the kernel had not heard: the page refused
    save(page)
    assert [c.source for c in read(path).cells] == [EDIT_CELLS[0], TYPED, 'print(total)', ASK]


@both_apps
def test_the_dry_run_right_after_an_edit_shows_the_edit(app, page, srv):
    path = write_notebook(app.root/'quick.ipynb', CELLS)
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    page.evaluate(f"""() => {{ const nb = {PANEL}.content;
        nb.widgets[{NOTE_CELL}].model.sharedModel.setSource({json.dumps('# Notes' + chr(10) + NEW_NOTE)});
        nb.activeCellIndex = {PROMPT};
        window.jupyterapp.commands.execute('boopiter:dry-run'); }}""")   # an edit, then at once a dry run
    until(page, app, f"document.querySelector('{DIALOG} .boop-DryRun')?.dataset.state === 'done'", 'the dry run')
    shown = page.locator(DIALOG).inner_text()
    assert NEW_NOTE in shown and OLD_NOTE not in shown, shown


LONG_LINE = 'a_rather_long_identifier_name = ' + ' + '.join(f'value_number_{i}' for i in range(40))
DRY_CELLS = ['%load_ext boopiter_ext', LONG_LINE.replace(' + ', ' * 0 + ').replace('value_number_', '') + '\nprint(1)',
             'notes = "' + 'word ' * 400 + '"', '%%prompt --dry-run\nWhat do these cells do?']


@both_apps
def test_a_dry_run_in_a_cell_folds_its_messages_and_wraps_at_word_boundaries(app, page, srv, artifacts):
    page.set_viewport_size({'width': 1100, 'height': 900})
    path = write_notebook(app.root/'dry.ipynb', DRY_CELLS)
    open_notebook(page, app, path.name)
    run_all(page, app)
    wait_all_ran(page, app)
    out = cells(page).nth(3).locator('.boop-DryRun')
    until(page, app, f"{PANEL}.content.widgets[3].node.querySelector('.boop-DryRun')?.dataset.state === 'done'", 'the dry run')
    head = out.inner_text()
    assert 'Dry run: nothing was sent. Model: ' in head and 'What do these cells do?' not in head   # folded: not shown
    folded = out.locator('.boop-DryRun-content > details')
    summaries = folded.locator('summary').all_inner_texts()
    assert summaries[0].startswith('Context: ') and [t.split(' · ')[0] for t in summaries[1:]] == ['system', 'user']
    assert folded.evaluate_all('ds => ds.map(d => d.open)') == [False] * len(summaries)   # collapsed
    height = cells(page).nth(3).locator('.jp-Cell-outputArea').bounding_box()['height']
    assert height < 400, height                                          # a list to open, not ~3,500 px of messages
    folded.nth(2).locator('summary').click()                             # the question, opened: it wraps at words
    pre = folded.nth(2).locator('pre').first
    assert 'What do these cells do?' in pre.inner_text()
    assert pre.evaluate("p => getComputedStyle(p).wordBreak") == 'normal'
    assert pre.evaluate("p => p.scrollWidth <= p.clientWidth + 1")       # no sideways scrolling either
    screenshot(cells(page).nth(3).locator('.jp-Cell-outputArea'), artifacts/f'{app.app}-dry-run-inline-light.png',
               (300, 60, 3000))
    assert srv.chats() == []


STOP_CELLS = ['%load_ext boopiter_ext', '%%prompt --fresh\nCount to a thousand.', 'after = "ran"\nprint(after)']


@both_apps
def test_stop_ends_the_reply_as_stopped_and_nothing_else(app, page, srv, artifacts):
    path = write_notebook(app.root/'stop.ipynb', STOP_CELLS)
    open_notebook(page, app, path.name)
    srv.script(' '.join(f'n{i}' for i in range(1000)), delay=0.03)
    run_all(page, app)                                                   # the cell below is queued behind the prompt
    until(page, app, f"(r => r?.dataset.boopStatus === 'streaming' && r.querySelector('.boop-Reply-body').innerText.length > 40)"
                     f"({PANEL}.content.widgets[1].node.querySelector('.boop-Reply'))", 'the reply streaming')
    reply(page, 1).locator('button.boop-Reply-stop').click()
    until(page, app, f"{PANEL}.content.widgets[1].node.querySelector('.boop-Reply').dataset.boopStatus === 'interrupted'",
          'the reply stopped')
    wait_all_ran(page, app)                                              # the run went on: stopping is not an error
    assert page.evaluate(f"() => {PANEL}.content.widgets[2].model.outputs.toJSON()[0]?.text") == 'ran\n'
    outputs = page.evaluate(f'() => {PANEL}.content.widgets[1].model.outputs.toJSON()')
    assert [o['output_type'] for o in outputs] == ['display_data'], outputs   # the reply, no red box
    stopped = reply(page, 1)
    assert stopped.locator('.boop-Badge').inner_text().split() == ['⏹', 'interrupted']
    assert not srv.streams[-1].completed and srv.streams[-1].disconnected
    screenshot(cells(page).nth(1), artifacts/f'{app.app}-stopped-light.png', (300, 60, 3000))
    save(page)
    saved = read(path)
    assert [o['output_type'] for o in saved.cells[1].outputs] == ['display_data']   # nor in the file, nor its export
    assert saved_reply(saved, 1)['metadata']['boopiter']['status'] == 'interrupted'
    assert saved_reply(saved, 1)['data'][REPLY_MIME]['status'] == 'interrupted'


SCRIPT = 'x=6\necho "six times seven is $((x * 7))"'   # as a Python cell, a syntax error
SHELL_REPLY = f'In a shell:\n\n```bash\n{SCRIPT}\n```\n\nIt prints:\n\n```json\n{{"product": 42}}\n```'


@both_apps
def test_a_bash_block_is_inserted_as_a_bash_cell_that_runs_and_json_is_copy_only(app, page, srv):
    path = write_notebook(app.root/'shell.ipynb', ['%load_ext boopiter_ext', '%%prompt\nHow do I multiply in bash?'])
    open_notebook(page, app, path.name)
    srv.script(SHELL_REPLY)
    run_all(page, app)
    wait_for_chat(app, srv, 1)
    wait_all_ran(page, app)
    until(page, app, reply_done(1), 'the reply')
    bars = reply(page, 1).locator('.boop-CodeActions')
    assert [bars.nth(i).locator('button').all_inner_texts() for i in range(bars.count())] == [
        ['Insert', 'Insert and run', 'Copy'], ['Copy']]                 # JSON: no cell runs it
    bars.nth(0).locator('[data-boop-action="run"]').click()
    until(page, app, f"{PANEL}.content.widgets.length === 3 && {PANEL}.content.widgets[2].model.executionCount && "
                     f"{KERNEL_STATUS} === 'idle'", 'the inserted cell run')
    assert page.evaluate(f'() => {PANEL}.content.widgets[2].model.sharedModel.getSource()') == f'%%bash\n{SCRIPT}'
    assert [t.strip() for t in page.evaluate(f'() => ({OUTPUT_TEXTS})(2)')] == ['six times seven is 42']   # in bash
    assert not page.evaluate(f"() => {PANEL}.content.widgets[2].model.outputs.toJSON().some(o => o.output_type === 'error')")
