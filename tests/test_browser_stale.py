"""A rerun never asks again behind your back (issue 22.2), in JupyterLab 4 and Notebook 7 (headless Chromium): after a
cell above a prompt changes, Run All shows the prompt's saved reply marked stale, naming that cell, with one Ask again;
the click asks the model and keeps the replaced answer, folded, as the previous one. Harness: tests/browser.py."""

import pytest
from browser import (KERNEL_STATUS, PANEL, both_apps, open_notebook, reply, reply_done, run_all, save, screenshot,
                     until, wait_for_chat, write_notebook)
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


def shows(cell, selector):
    "JavaScript: the element `selector` of the reply view in `cell`, if it is shown."
    return (f"(e => e && !e.hidden && e.offsetParent !== null ? e : null)"
            f"({PANEL}.content.widgets[{cell}].outputArea.node.querySelector('.boop-Reply {selector}'))")


@both_apps
def test_a_stale_reply_is_marked_with_the_cell_that_changed_and_ask_again_asks(app, page, srv, artifacts):
    path = write_notebook(app.root/'stale.ipynb', ['%load_ext boopiter_ext', 'x = 6 * 7', '%%prompt\nWhat is x?'])
    open_notebook(page, app, path.name)
    srv.script('x is 42.')
    run_all(page, app)
    wait_for_chat(app, srv, 1)
    until(page, app, reply_done(2) + f" && {KERNEL_STATUS} === 'idle'", 'the answer')
    save(page)

    page.evaluate(f"() => {PANEL}.content.widgets[1].model.sharedModel.setSource('x = 43')")   # the cell above changes
    run_all(page, app)
    until(page, app, f"{shows(2, '.boop-Reply-stale')} && {KERNEL_STATUS} === 'idle' && "
          f"{PANEL}.content.widgets[2].outputArea.node.querySelector('.boop-Reply')?.dataset.boopPending === '0'",
          'the saved reply, marked stale', 90)
    assert len(srv.chats()) == 1                                          # Run All asked no model
    view = reply(page, 2)
    mark = view.locator('.boop-Reply-stale')
    assert 'In [5] x = 43 changed' in mark.inner_text() and mark.locator('code').first.inner_text() == 'x = 43'
    assert 'x is 42.' in view.locator('.boop-Reply-body').inner_text()
    screenshot(page.locator('.jp-Notebook'), artifacts/f'{app.app}-stale-reply.png', (300, 100, 3000))

    srv.script('x is 43.')
    mark.get_by_role('button', name='Ask again').click()                 # deliberate: one click
    wait_for_chat(app, srv, 2)
    until(page, app, f"{shows(2, '.boop-Reply-previous')} && {KERNEL_STATUS} === 'idle' && "
          f"!{shows(2, '.boop-Reply-stale')} && " + reply_done(2), 'the fresh answer, the old one kept', 90)
    assert 'x is 43.' in view.locator('.boop-Reply-body').inner_text()
    previous = view.locator('.boop-Reply-previous')
    assert previous.locator('summary').inner_text().startswith('Previous answer')
    previous.locator('summary').click()
    assert previous.locator('pre').inner_text() == 'x is 42.'           # recoverable
    assert len(srv.chats()) == 2
    screenshot(page.locator('.jp-Notebook'), artifacts/f'{app.app}-asked-again.png', (300, 100, 3000))
