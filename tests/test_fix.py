"""From an error to a question about it: `%boop fix` in a real kernel, and the question as plain Python."""

import json
import pytest
from boopiter_ext.context.build import Cell
from boopiter_ext.core.fixing import cell_holding, failed_cell, failed_source, fix_question

MODEL, REPLY_MIME = 'qwen3:1.7b', 'application/vnd.boopiter.reply+json'


def failed(n, ename='KeyError', evalue="'x'"):
    return Cell('d["x"]', exec_count=n, outputs=[dict(output_type='error', ename=ename, evalue=evalue, traceback=[])])


def test_the_cell_to_fix_is_the_last_that_failed_or_the_one_named():
    ok, one, two = Cell('1', exec_count=1), failed(2), failed(3, 'ZeroDivisionError', 'division by zero')
    assert failed_cell([ok, one, two]) is two and failed_cell([ok, one, two], 2) is one
    assert failed_cell([ok, one], 1) is None and failed_cell([ok]) is None
    prompt = Cell('%%prompt\nwhy', 'prompt', exec_count=4, outputs=[dict(output_type='error', ename='BoopError')])
    assert failed_cell([one, prompt]) is one   # a prompt's own fault is not a cell to fix
    assert fix_question(two) == ('Cell [3] failed with `ZeroDivisionError: division by zero`. Why did it fail, and how do '
                                 'I fix it? Answer briefly, then give the fixed cell whole as one python block.')
    before = Cell('', origin='history', outputs=[dict(output_type='error', ename='KeyError', evalue="'k'",
                                                      traceback=['Traceback (most recent call last):', "KeyError: 'k'"])])
    assert fix_question(before, 'Why?') == ("The last cell that failed before boopiter was loaded failed with this error:"
                                            "\n\n```\nTraceback (most recent call last):\nKeyError: 'k'\n```\n\nWhy?")
    odd = failed(5, 'ValueError', 'bad `value`\n' + 'x' * 500)   # one line, no code span broken, bounded
    q = fix_question(odd)
    assert "`ValueError: bad 'value' xxx" in q and '\n' not in q and len(q) < 400


def test_a_failure_from_before_cells_were_recorded_is_found_in_the_notebook_by_its_text():
    import linecache
    src = 'prices = {"tea": 3}\nprices["coffee"]\n'
    name = '/tmp/ipykernel_0/fix-test.py'   # as IPython caches a cell's code, so tracebacks can show it
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    try:
        try: exec(compile(src, name, 'exec'), {})
        except KeyError as e: err = e
        assert failed_source(err) == src
    finally: linecache.cache.pop(name, None)
    assert failed_source(err) == ''   # its text is not known any more: nothing to match
    cells = [Cell('x = 1', cell_id='a'), Cell(src.strip(), cell_id='b'), Cell(src, 'markdown', cell_id='m')]
    assert cell_holding(src, cells) == 'b'
    assert cell_holding(src, cells + [Cell(src, cell_id='c')]) is None   # two cells hold it: which failed is unknown
    assert cell_holding('', cells) is None and cell_holding('y = 2', cells) is None


@pytest.mark.slow
def test_boop_fix_asks_about_the_failure_with_its_traceback_in_view_and_reruns_from_the_saved_reply(kernel, srv):
    assert kernel.run('%boop fix').text == 'No cell above failed: nothing to fix.\n'
    assert kernel.run('prices = {"tea": 3}\nprices["coffee"]').status == 'error'
    srv.script("`prices` has no key 'coffee'. Add it first:\n\n```python\nprices['coffee'] = 4\n```")
    res = kernel.run(f'%config BoopMagics.model = {MODEL!r}\n%boop fix', cell_id='fix')
    assert res.status == 'ok' and res.reply['data']['text/plain'].startswith("`prices` has no key 'coffee'")
    sent = srv.last_chat()['messages'][-1]['content']
    assert "failed with `KeyError: 'coffee'`. Why did it fail, and how do I fix it?" in sent
    assert 'prices["coffee"]' in sent and 'KeyError' in sent.partition('failed with')[0]   # the cell and its traceback
    asked = len(srv.chats())
    assert kernel.run('%boop fix', cell_id='fix').reply['data']['text/plain'].startswith('`prices` has no key')
    assert len(srv.chats()) == asked   # run again: its saved reply, not a new request
    assert kernel.run('%boop fix 1').text == 'Cell [1] did not fail: nothing to fix.\n'
    assert kernel.run('1 / 0', cell_id='c9').status == 'error'
    srv.script('Dividing by zero has no answer.')
    res = kernel.run('%%prompt --fix\nWhy, in a word?', cell_id='p2')   # the prompt cell the extension puts below an error
    assert res.reply['data']['text/plain'] == 'Dividing by zero has no answer.'
    assert res.reply['data'][REPLY_MIME]['fixes'] == 'c9'   # the page offers the reply's code for that cell
    sent = srv.last_chat()['messages'][-1]['content']
    assert sent.endswith("failed with `ZeroDivisionError: division by zero`.\n\nWhy, in a word?")
    res = kernel.run('%%prompt --fix x\nWhy?')
    assert "`--fix` takes a cell number, as in `[3]`, not 'x'." in res.text + json.dumps(res.error)
