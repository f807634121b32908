"""The notebook stays usable while a reply streams (issue 24), in JupyterLab 4 and Notebook 7 with the real extension.

The prompt cell ends once its request is on its way; while its reply streams on into it, a code cell runs and shows
its output, and, during a cell that sleeps, a pick in the brain menu reaches the kernel and comes back as the
notebook's binding. The reply ends exact in its own cell, and the saved notebook holds it whole.
Harness: tests/browser.py."""

import json, time
import pytest
from browser import (cells, MENU_PANEL, MENU_PHASE, OUTPUT_TEXTS, PANEL, REPLY_MIME, both_apps, open_menu, open_notebook,
                     read, reply_done, run_cell, save, saved_reply, until, until_answering, write_notebook)
from browser import app, lab, nb7, page  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow
MODEL = 'qwen3:1.7b'
WORDS = [f'word{i} ' for i in range(80)]   # 80 tokens 0.1 s apart: about 8 s of streaming
CELLS = ['%load_ext boopiter_ext', f'%%prompt -m {MODEL}\nCount slowly', 'print(6 * 7)', 'import time; time.sleep(4)',
         f'%%prompt -m {MODEL}\nAnd the last word?']
def status(cell): return f"{PANEL}.content.widgets[{cell}].outputArea.node.querySelector('.boop-Reply')?.dataset.boopStatus"
STATUS = status(1)


@both_apps
def test_a_cell_runs_and_the_menu_answers_while_a_reply_streams(app, page, srv):
    path = write_notebook(app.root/'beside.ipynb', CELLS)
    open_notebook(page, app, path.name)
    run_cell(page, 0)
    until(page, app, f"{MENU_PHASE} === 'ready'", 'boopiter loaded')
    srv.script(''.join(WORDS), delay=0.1)
    srv.script('It was word79.')
    run_cell(page, 1)
    until(page, app, f"{STATUS} === 'streaming'", 'the reply streaming')
    until(page, app, f"{PANEL}.content.widgets[1].model.executionCount !== null", 'the prompt cell ended')
    run_cell(page, 2)
    until(page, app, f"({OUTPUT_TEXTS})(2).join('') === '42\\n'", 'the code cell\'s output', timeout=5)
    assert page.evaluate(f'() => {STATUS}') == 'streaming'                # it ran beside the reply, not after it
    run_cell(page, 4)                                                     # a later prompt: queued behind the reply
    until(page, app, f"{PANEL}.content.widgets[4].model.executionCount !== null && {status(4)} === 'waiting'",
          'the later prompt ended, its reply waiting', timeout=5)
    live = cells(page).nth(4).locator('.boop-Reply-live')
    assert 'waiting for the reply above to end' in live.inner_text() and live.get_by_role('button').count()   # with Stop

    run_cell(page, 3)                                                     # your long cell: the kernel's main shell is busy
    at = time.monotonic()
    open_menu(page, app)
    pick = 'smollm2:135m'
    page.locator(f'{MENU_PANEL} [role="option"][data-model="{pick}"]').click()
    until(page, app, f"{PANEL}.model.getMetadata('boopiter')?.binding?.model === {json.dumps(pick)}",
          'the binding back from the kernel', timeout=3)
    until_answering(page, app, f'answering: {pick} (notebook binding)')
    assert time.monotonic() - at < 3.5                                    # within the sleep: a subshell answered it
    assert page.evaluate(f'() => {STATUS}') == 'streaming'
    page.keyboard.press('Escape')

    until(page, app, reply_done(1), 'the reply ended', timeout=30)
    assert page.evaluate(f'() => {STATUS}') == 'done'
    until(page, app, reply_done(4), 'the later reply', timeout=30)
    assert 'word79' in str(srv.last_chat()['messages'])                   # it saw the whole reply above
    save(page)
    saved = read(path)
    data = saved_reply(saved, 1)['data']
    assert data[REPLY_MIME]['status'] == 'done' and data['text/plain'] == ''.join(WORDS)   # whole, in its own cell
    assert [o.get('text') for o in saved.cells[2].outputs] == ['42\n']    # nothing of the reply in the other cells
    assert saved.cells[3].outputs == []
    assert saved_reply(saved, 4)['data']['text/plain'] == 'It was word79.'


BLOCK = "print('from the reply')"
SLOW = f'Run this:\n\n```python\n{BLOCK}\n```\n\n' + ''.join(f'then{i} ' for i in range(40))


@both_apps
def test_a_block_inserted_and_run_while_its_reply_streams_runs_once_the_reply_has_ended(app, page, srv):
    path = write_notebook(app.root/'insert.ipynb', CELLS[:2])
    open_notebook(page, app, path.name)
    run_cell(page, 0)
    until(page, app, f"{MENU_PHASE} === 'ready'", 'boopiter loaded')
    srv.script(SLOW, delay=0.1)   # the block first, then 4 s more of text
    run_cell(page, 1)
    run = cells(page).nth(1).locator('.boop-Code [data-boop-action="run"]')
    run.wait_for(timeout=20_000)
    assert page.evaluate(f'() => {STATUS}') == 'streaming'
    run.click()
    until(page, app, f'{PANEL}.content.widgets.length === 3', 'the inserted cell')
    assert 'it runs when the reply ends' in run.inner_text()             # it says why it waits
    assert page.evaluate(f'() => {PANEL}.content.widgets[2].model.executionCount') is None
    until(page, app, reply_done(1), 'the reply ended', timeout=30)
    until(page, app, f"({OUTPUT_TEXTS})(2).join('') === 'from the reply\\n'", 'the inserted cell run after the reply')
