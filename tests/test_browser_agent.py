"""Agent mode in JupyterLab 4 and Notebook 7 with the real extension (`%%prompt --agent`): the model's code goes into
cells below the prompt, each run as a real cell once the user clicks (Run, or Run the rest of this reply; Skip and Stop
take the cell out), its outputs and errors handed back to the model, which fixes what failed and answers. The reply
holds every round and lists the cells it made; the prompt's Undo all takes them out again. Harness: tests/browser.py."""

import json
import pytest
from browser import (KERNEL_STATUS, PANEL, REPLY_MIME, both_apps, cells, load_boopiter, open_notebook, read, run_cell, save,
                     screenshot, until, wait_for_chat, write_notebook)
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow
SOURCES = f'{PANEL}.content.widgets.map(c => c.model.sharedModel.getSource())'
ASK = '%%prompt --agent\nWhat is the mean of 1, 2 and 3? Compute it in cells.'
FIRST, SECOND, FIX = 'data = [1, 2, 3]', 'print(mean(data))', 'from statistics import mean\nprint(mean(data))'
STEP = '.boop-Review.boop-mod-step'


def step(page, cell, choice):
    "Click `choice` on the question of the model's cell `cell` once it shows."
    ask = cells(page).nth(cell).locator(STEP)
    ask.wait_for(timeout=60_000)
    ask.locator(f'[data-boop-step="{choice}"]').click()
    return ask


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
    until(page, app, f'{SOURCES}.length === 2', "the model's first cell, below the prompt")
    assert page.evaluate(f'() => {SOURCES}') == [ASK, FIRST] and output_of(page, 1) == []   # not run before the click
    assert 'boop-mod-model' in cells(page).nth(1).get_attribute('class')                 # marked as the model's
    screenshot(cells(page).nth(1).locator(STEP), artifacts/f'{app.app}-agent-step.png', min_size=(300, 30, 1000))
    step(page, 1, 'run')
    until(page, app, f'{SOURCES}.length === 3', "the model's second cell")
    step(page, 2, 'rest')                                  # this one, and the rest of this reply, without asking
    wait_for_chat(app, srv, 2)
    sent = json.dumps(srv.last_chat()['messages'][-1])
    assert "NameError: name 'mean' is not defined" in sent, sent[-2000:]   # its error, back to the model
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
    assert [c.metadata.get('tags') for c in saved.cells[1:]] == [['boop-model']] * 3
    # run again, the prompt shows its saved reply: nothing is asked, no cell made or run
    counts = page.evaluate(f'() => {PANEL}.content.widgets.map(c => c.model.executionCount)')
    run_cell(page, 0)
    until(page, app, f"{KERNEL_STATUS} === 'idle' && {PANEL}.content.widgets[0].model.executionCount > {counts[0]} && "
                     f"{PANEL}.content.widgets[0].model.outputs.toJSON().some(o => o.data?.['{REPLY_MIME}']?.status === 'done')",
          'the saved reply, again')
    assert len(srv.chats()) == 3 and page.evaluate(f'() => {SOURCES}') == [ASK, FIRST, SECOND, FIX]
    assert page.evaluate(f'() => {PANEL}.content.widgets.map(c => c.model.executionCount)')[1:] == counts[1:]
    assert 'The mean of 1, 2 and 3 is 2.' in cells(page).nth(0).locator('.boop-Reply').inner_text()
    # Undo all: the cells the reply made go, as one step
    bar = cells(page).nth(0).locator('.boop-Changes')
    assert 'changed the notebook 3 times' in bar.inner_text()
    bar.get_by_role('button', name='Undo all').click()
    until(page, app, f'{SOURCES}.length === 1', 'the cells undone')
    assert page.evaluate(f'() => {SOURCES}') == [ASK]


@both_apps
def test_skip_takes_the_cell_out_and_stop_ends_the_agent(app, page, srv):
    path = write_notebook(app.root/'agent-stop.ipynb', [ASK])
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    srv.script(f'```python\n{FIRST}\n```\n\n```python\nimport subprocess\n```')
    srv.script(f'Then without it.\n\n```python\n{SECOND}\n```')
    run_cell(page, 0)
    step(page, 1, 'skip')
    until(page, app, f'{SOURCES}.length === 2 && {SOURCES}[1] === "import subprocess"', 'the skipped cell gone, the next one asked')
    ask = cells(page).nth(1).locator(STEP)
    ask.wait_for(timeout=30_000)
    assert 'asked every time: it imports subprocess' in ask.inner_text() and ask.locator('[data-boop-step="rest"]').count() == 0
    ask.locator('[data-boop-step="run"]').click()
    wait_for_chat(app, srv, 2)
    assert 'The user chose not to run it.' in json.dumps(srv.last_chat()['messages'][-1])
    step(page, 2, 'stop')
    until(page, app, f"{PANEL}.content.widgets[0].model.outputs.toJSON().some(o => (o.data?.['{REPLY_MIME}']?.note ?? '')"
                     ".includes('ended: stopped'))", 'the agent stopped')
    assert page.evaluate(f'() => {SOURCES}') == [ASK, 'import subprocess']   # the stopped cell is taken out too
    until(page, app, f"{KERNEL_STATUS} === 'idle'", 'the kernel idle')
    assert len(srv.chats()) == 2   # nothing asked after Stop
