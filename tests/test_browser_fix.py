"""From an error to an answer, in JupyterLab 4 and Notebook 7 with the real extension: an error's "Ask why" puts a
prompt cell below the failing cell (`%%prompt --fix`), loads boopiter first when the notebook has not, and runs it;
the model reads the failing cell and its traceback, and the reply is in that prompt cell. Harness: tests/browser.py."""

import pytest
from browser import PANEL, both_apps, cells, open_notebook, read, reply_done, run_cell, save, until, write_notebook
from browser import app, lab, nb7, page  # noqa: F401 (fixtures)

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
