"""From an error to an answer, in JupyterLab 4 and Notebook 7 with the real extension: an error's "Ask why" puts a
prompt cell below the failing cell (`%%prompt --fix`), loads boopiter first when the notebook has not, and runs it;
the model reads the failing cell and its traceback, and the reply is in that prompt cell. The reply's fixed cell goes
back into the failing cell only through a review: a diff in that cell, Reject or Accept and run; the prompt cell's
Undo puts it back as it was. Harness: tests/browser.py."""

import json
import pytest
from browser import PANEL, both_apps, cells, open_notebook, read, reply_done, run_cell, save, screenshot, until, write_notebook
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


@both_apps
def test_an_errors_ask_why_puts_a_fix_prompt_below_it_and_the_reply_answers_it(app, page, srv):
    path = write_notebook(app.root/'fails.ipynb', ['prices = {"tea": 3}\nprices["coffee"]'])
    open_notebook(page, app, path.name)
    run_cell(page, 0)
    ask = cells(page).nth(0).locator('button.boop-AskWhy')
    ask.wait_for(timeout=30_000)
    assert ask.inner_text() == 'Ask why'
    srv.script("`prices` has no key 'coffee'. Add it first:\n\n```python\nprices['coffee'] = 4\n```")
    ask.click()
    sources = f'{PANEL}.content.widgets.map(c => c.model.sharedModel.getSource())'
    until(page, app, f"{sources}.length === 3", 'the load cell and the prompt cell')
    got = page.evaluate(f'() => {sources}')
    assert got[0] == '%load_ext boopiter_ext' and got[1].startswith('prices = ')   # loaded as the notebook records it
    assert got[2] == '%%prompt --fix\nWhy did the cell above fail, and how do I fix it?'
    until(page, app, reply_done(2), 'the reply to the fix prompt', timeout=60)
    assert "prices has no key 'coffee'" in cells(page).nth(2).locator('.boop-Reply').inner_text()
    sent = srv.last_chat()['messages'][-1]['content']
    # it failed before boopiter was loaded: its traceback comes with the question; its source is in the context
    assert "KeyError: 'coffee'\n```\n\nWhy did the cell above fail, and how do I fix it?" in sent
    assert 'prices["coffee"]' in str(srv.last_chat()['messages'])
    assert cells(page).nth(2).locator('button.boop-AskWhy').count() == 0   # a reply is no error to ask about
    cells(page).nth(2).get_by_role('button', name='Insert and run').click()   # the fix, as a cell of its own, run
    until(page, app, f"{sources}.length === 4 && {PANEL}.content.widgets[3].model.executionCount !== null", 'the fix ran')
    assert page.evaluate(f'() => {sources}')[3] == "prices['coffee'] = 4"
    assert 'boop-mod-model' in cells(page).nth(3).get_attribute('class')   # the model's code, marked as such
    save(page)
    saved = read(path)
    assert saved.cells[2].source.startswith('%%prompt --fix') and saved.cells[2].outputs
    assert saved.cells[3].metadata.get('tags') == ['boop-model'] and 'boop-model' not in saved.cells[1].metadata.get('tags', [])


FIXED = 'prices = {"tea": 3, "coffee": 4}\nprices["coffee"]'
SOURCES = f'{PANEL}.content.widgets.map(c => c.model.sharedModel.getSource())'
REVIEW = '.boop-Review'


@both_apps
def test_a_fix_is_reviewed_as_a_diff_in_the_failing_cell_runs_once_accepted_and_undo_restores_it(app, page, srv, artifacts):
    broken = 'prices = {"tea": 3}\nprices["coffee"]'
    path = write_notebook(app.root/'review.ipynb', [broken])
    open_notebook(page, app, path.name)
    run_cell(page, 0)
    ask = cells(page).nth(0).locator('button.boop-AskWhy')
    ask.wait_for(timeout=30_000)
    srv.script(f"There is no `coffee` in `prices`. The fixed cell:\n\n```python\n{FIXED}\n```")
    ask.click()
    until(page, app, f"{SOURCES}.length === 3", 'the load cell and the prompt cell')
    until(page, app, reply_done(2), 'the reply to the fix prompt', timeout=60)
    fix = cells(page).nth(2).get_by_role('button', name='Fix the cell')
    # Reject: the review goes, nothing changes
    fix.click()
    review = cells(page).nth(1).locator(REVIEW)
    review.wait_for(timeout=10_000)
    rows = review.locator('.boop-Review-line').all_inner_texts()
    assert rows == ['- prices = {"tea": 3}', '+ prices = {"tea": 3, "coffee": 4}', '  prices["coffee"]'], rows
    screenshot(review, artifacts/f'{app.app}-fix-review.png', min_size=(300, 60, 2000))
    review.get_by_role('button', name='Reject').click()
    until(page, app, f"!document.querySelector('{REVIEW}')", 'the review gone')
    assert page.evaluate(f'() => {SOURCES}')[1] == broken and cells(page).nth(2).locator('.boop-Changes').count() == 0
    # Accept: the cell holds the fix and runs, as the notebook runs any cell
    count = page.evaluate(f'() => {PANEL}.content.widgets[1].model.executionCount')
    fix.click()
    cells(page).nth(1).locator(REVIEW).get_by_role('button', name='Accept and run').click()
    until(page, app, f"{PANEL}.content.widgets[1].model.executionCount > {count} && "
                     f"{PANEL}.content.widgets[1].model.outputs.length === 1", 'the fixed cell ran')
    assert page.evaluate(f'() => {SOURCES}')[1] == FIXED
    out = page.evaluate(f'() => {PANEL}.content.widgets[1].model.outputs.get(0).toJSON()')
    assert out['output_type'] == 'execute_result' and out['data']['text/plain'] == '4', out
    assert cells(page).nth(1).locator('button.boop-AskWhy').count() == 0   # no error left to ask about
    # Undo: the prompt cell's bar puts the cell back as it was, in one step
    bar = cells(page).nth(2).locator('.boop-Changes')
    assert 'changed the notebook 1 time' in bar.inner_text()
    bar.get_by_role('button', name='Undo all').click()
    until(page, app, f"{SOURCES}[1] === {json.dumps(broken)}", 'the fix undone')
    assert bar.inner_text() == 'Undone: 1 change.'
    save(page)
    assert [c.source for c in read(path).cells][1:] == [broken, '%%prompt --fix\nWhy did the cell above fail, and how do I fix it?']
