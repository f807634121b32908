"""Agent mode in JupyterLab 4 and Notebook 7 with the real extension (`%%prompt --agent`): each block of the model's
is shown under the prompt and becomes a cell below it only on the user's click (Run, or Run the rest of this reply: that
reply's, not the next one's; Skip and Stop make no cell), run as a real cell, its outputs and errors handed back to the
model, which fixes what failed and answers. The reply holds every round and lists the cells it made; restart and Run
All reproduce it; the prompt's Undo all takes the cells out again. Harness: tests/browser.py."""

import json
import pytest
from browser import (KERNEL_STATUS, PANEL, REPLY_MIME, both_apps, cells, clear_counts, load_boopiter, open_menu, open_notebook, read,
                     restart_and_run_all, run_cell, save, screenshot, until, wait_all_ran, wait_for_chat, write_notebook)
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow
SOURCES = f'{PANEL}.content.widgets.map(c => c.model.sharedModel.getSource())'
ASK = '%%prompt --agent\nWhat is the mean of 1, 2 and 3? Compute it in cells.'
FIRST, SECOND, FIX = 'data = [1, 2, 3]', 'print(mean(data))', 'from statistics import mean\nprint(mean(data))'
STEP = '.boop-Review.boop-mod-step'


def step(page, code, choice):
    "Click `choice` on the question under the prompt cell about the block `code`, once it shows; its text."
    ask = cells(page).nth(0).locator(STEP).filter(has_text=code.splitlines()[0])
    ask.wait_for(timeout=60_000)
    said = ask.inner_text()
    ask.locator(f'[data-boop-step="{choice}"]').click()
    until_gone(page, code)
    return said


def until_gone(page, code):
    page.wait_for_function('code => !Array.from(document.querySelectorAll(".boop-mod-step pre"), p => p.textContent).includes(code)',
                           arg=code, timeout=10_000)


def output_of(page, i):
    return page.evaluate(f'() => {PANEL}.content.widgets[{i}].model.outputs.toJSON()')


@both_apps
def test_an_agent_prompt_writes_cells_runs_them_on_consent_sees_an_error_fixes_it_and_answers_and_undo_restores(
        app, page, srv, artifacts):
    path = write_notebook(app.root/'agent.ipynb', [ASK])
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    srv.script(f'First the data, then its mean.\n\n```python\n{FIRST}\n```\n\n```python\n{SECOND}\n```')
    srv.script(f'`mean` needs importing.\n\n```python\n{FIX}\n```')
    srv.script('The mean of 1, 2 and 3 is 2.')
    run_cell(page, 0)
    ask = cells(page).nth(0).locator(STEP).filter(has_text=FIRST)
    ask.wait_for(timeout=60_000)
    assert page.evaluate(f'() => {SOURCES}') == [ASK]      # nothing in the notebook before the click
    screenshot(ask, artifacts/f'{app.app}-agent-step.png', min_size=(300, 60, 1000))
    step(page, FIRST, 'run')
    until(page, app, f'{SOURCES}.length === 2 && {PANEL}.content.widgets[1].model.executionCount !== null', 'the first cell ran')
    assert 'boop-mod-model' in cells(page).nth(1).get_attribute('class')                 # marked as the model's
    step(page, SECOND, 'rest')                             # this one, and the rest of this reply, without asking
    wait_for_chat(app, srv, 2)
    sent = json.dumps(srv.last_chat()['messages'][-1])
    assert "NameError: name 'mean' is not defined" in sent, sent[-2000:]   # its error, back to the model
    step(page, FIX, 'run')                                 # the next reply asks again: it was written after the error
    until(page, app, f'{SOURCES}.length === 4 && {PANEL}.content.widgets[3].model.executionCount !== null', 'the fix ran')
    wait_for_chat(app, srv, 3)
    assert '2' in json.dumps(srv.last_chat()['messages'][-1])
    until(page, app, f"{PANEL}.content.widgets[0].model.outputs.toJSON().some(o => o.data?.['{REPLY_MIME}']?.status === 'done' "
                     f"&& (o.data['{REPLY_MIME}'].note ?? '').includes('ended: answered'))", 'the answer')
    assert page.evaluate(f'() => {SOURCES}') == [ASK, FIRST, SECOND, FIX]
    assert output_of(page, 2)[0]['output_type'] == 'error' and output_of(page, 3)[0]['text'] == '2\n'
    assert page.locator(STEP).count() == 0
    text = cells(page).nth(0).locator('.boop-Reply').inner_text()
    assert 'First the data' in text and 'raised an error' in text and 'The mean of 1, 2 and 3 is 2.' in text   # every round
    replies = [o for o in output_of(page, 0) if REPLY_MIME in o.get('data', {})]
    assert len(replies) == 1 and 'agent mode: 3 cells made' in replies[0]['data'][REPLY_MIME]['note']   # one reply, whole
    save(page)
    saved = read(path)
    assert [c.metadata.get('tags') for c in saved.cells[1:]] == [['boop-model'], ['boop-model', 'raises-exception'],
                                                                  ['boop-model']]   # the step that failed, on the record
    # restart and Run All reproduce it: the prompt shows its saved reply (nothing asked, no cell made), its cells run
    # in order, on past the one that failed to the fix
    clear_counts(page)
    restart_and_run_all(page, app)
    wait_all_ran(page, app)
    until(page, app, f"{PANEL}.content.widgets[0].model.outputs.toJSON().some(o => o.data?.['{REPLY_MIME}']?.status === 'done')",
          'the saved reply, again')
    assert len(srv.chats()) == 3 and page.evaluate(f'() => {SOURCES}') == [ASK, FIRST, SECOND, FIX]
    assert output_of(page, 2)[0]['output_type'] == 'error' and output_of(page, 3)[0]['text'] == '2\n'
    assert 'The mean of 1, 2 and 3 is 2.' in cells(page).nth(0).locator('.boop-Reply').inner_text()
    assert page.locator(STEP).count() == 0    # Undo all: the cells the reply made go, as one step
    bar = cells(page).nth(0).locator('.boop-Changes')
    assert 'changed the notebook 3 times' in bar.inner_text()
    bar.get_by_role('button', name='Undo all').click()
    until(page, app, f'{SOURCES}.length === 1', 'the cells undone')
    assert page.evaluate(f'() => {SOURCES}') == [ASK]


@both_apps
def test_the_menu_inserts_an_agent_prompt_skip_takes_a_cell_out_and_stop_ends_the_agent(app, page, srv):
    path = write_notebook(app.root/'agent-stop.ipynb', ['# Means', ASK])
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    page.evaluate(f'() => {{ const nb = {PANEL}.content; nb.activeCellIndex = 0; }}')
    open_menu(page, app).get_by_role('button', name='+ Agent prompt').click()   # the menu's choice: a prompt cell below
    until(page, app, f"{SOURCES}.includes('%%prompt --agent\\n')", 'the agent prompt cell')
    # the user writes the question in it; this test keeps that cell alone in the notebook
    page.evaluate(f"""() => {{ const m = {PANEL}.content.model.sharedModel;
        const i = m.cells.findIndex(c => c.getSource() === '%%prompt --agent\\n');
        m.cells[i].setSource({json.dumps(ASK)});
        for (let j = m.cells.length - 1; j >= 0; j--) if (j !== i) m.deleteCell(j); }}""")
    until(page, app, f'{SOURCES}.length === 1', 'the prompt alone')
    srv.script(f'```python\n{FIRST}\n```\n\n```python\nimport subprocess\n```')
    srv.script(f'Then without it.\n\n```python\n{SECOND}\n```')
    run_cell(page, 0)
    step(page, FIRST, 'skip')
    ask = cells(page).nth(0).locator(STEP).filter(has_text='import subprocess')
    ask.wait_for(timeout=30_000)
    assert 'asked every time: it imports subprocess' in ask.inner_text() and ask.locator('[data-boop-step="rest"]').count() == 0
    assert page.evaluate(f'() => {SOURCES}') == [ASK]      # the skipped block made no cell
    step(page, 'import subprocess', 'run')
    wait_for_chat(app, srv, 2)
    assert 'The user chose not to run it.' in json.dumps(srv.last_chat()['messages'][-1])
    step(page, SECOND, 'stop')
    until(page, app, f"{PANEL}.content.widgets[0].model.outputs.toJSON().some(o => (o.data?.['{REPLY_MIME}']?.note ?? '')"
                     ".includes('ended: stopped'))", 'the agent stopped')
    assert page.evaluate(f'() => {SOURCES}') == [ASK, 'import subprocess']   # the stopped block made no cell either
    until(page, app, f"{KERNEL_STATUS} === 'idle'", 'the kernel idle')
    assert len(srv.chats()) == 2   # nothing asked after Stop
