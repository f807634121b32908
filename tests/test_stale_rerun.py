"""Run All of a notebook with saved replies spends no model call and replaces no answer (issue 22.2), in a real kernel
as JupyterLab runs it (cell ids, the notebook file) and headless with `boopiter-run`: a prompt whose context changed
keeps its reply, marked stale with the cell that changed; `--fresh` asks, and the replaced reply stays recoverable."""

import nbformat, pytest
from conftest import saved_replies as replies, write_code_notebook
from kernels import KernelSession
from boopiter_ext.faces.run import run_notebook
from boopiter_ext.render.reply import REPLY_MIME

pytestmark = pytest.mark.slow
MODEL = 'qwen3:1.7b'
CELLS = ['%load_ext boopiter_ext', 'nums = [1, 2, 3]', '', f'%%prompt -m {MODEL}\nHow do I reverse nums?',
         f'%%prompt -m {MODEL}\nAnd sort it?']


def answered_notebook(srv, tmp_path, monkeypatch):
    "A notebook whose prompts were answered and saved (a first run), then edited as the issue's user did."
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.script('nums[::-1]'); srv.script('sorted(nums)')
    assert run_notebook(write_code_notebook(tmp_path/'first.ipynb', CELLS), tmp_path/'nb.ipynb', write=lambda s: None)
    assert len(srv.chats()) == 2
    srv.reset()
    nb = nbformat.read(tmp_path/'nb.ipynb', as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell('nums.append(4)'))      # inserted above the prompts, never run
    nb.cells.insert(3, nbformat.v4.new_code_cell(''))                     # and another empty cell
    nbformat.write(nb, tmp_path/'nb.ipynb')
    return tmp_path/'nb.ipynb'


def test_run_all_in_a_kernel_keeps_every_saved_reply_marks_the_stale_ones_and_fresh_asks(srv, tmp_path, monkeypatch):
    path = answered_notebook(srv, tmp_path, monkeypatch)
    nb = nbformat.read(path, as_version=4)
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(path)}) as k:
        def run_all(cells):   # Restart & Run All as JupyterLab sends it: each cell with its id
            return {c.id: k.run(c.source, cell_id=c.id, timeout=120) for c in cells}
        before = {c.id: c for c in nb.cells}
        got = run_all(nb.cells[:3])                                       # the cells above the inserted one: nothing new
        assert all(r.status == 'ok' for r in got.values())
        prompts = [c for c in nb.cells if c.source.startswith('%%prompt')]
        got = run_all(nb.cells[3:])                                       # the inserted cell runs now
        assert srv.chats() == []                                          # not one model call
        for c in prompts:
            r = got[c.id].reply
            saved = before[c.id].outputs[-1]
            md = r['metadata']['boopiter']
            assert r['data']['text/plain'] == saved['data']['text/plain']   # the saved answer, shown again
            assert md['stale'].startswith('Stale: since this reply, In [') and '`nums.append(4)` is new or ran' in md['stale']
            assert r['data'][REPLY_MIME]['stale'] == md['stale'] and 'run `%%prompt --fresh` to ask again' in md['stale']
            assert md['digest'] == saved['metadata']['boopiter']['digest']   # as it was made
        first = prompts[0]
        status = k.run('%boop status').text
        assert 'Run All asks no model: 2 kept but marked stale: `How do I reverse nums?`' in status, status
        srv.script('list(reversed(nums))')
        fresh = k.run(first.source.replace(f'-m {MODEL}', f'-m {MODEL} --fresh'), cell_id=first.id, timeout=120).reply
        assert len(srv.chats()) == 1 and fresh['data']['text/plain'] == 'list(reversed(nums))'
        assert fresh['metadata']['boopiter']['previous'] == dict(model=MODEL, answer='nums[::-1]')   # recoverable
        assert 'stale' not in fresh['metadata']['boopiter']
        again = k.run(first.source, cell_id=first.id, timeout=120).reply    # the fresh answer is this context's now
        assert len(srv.chats()) == 1 and again['metadata']['boopiter']['reused']


def test_boopiter_run_keeps_the_saved_replies_marked_and_a_fresh_cell_asks_keeping_the_old_one(srv, tmp_path, monkeypatch):
    path = answered_notebook(srv, tmp_path, monkeypatch)
    printed = []
    assert run_notebook(path, tmp_path/'run.ipynb', write=printed.append)
    text = ''.join(printed)
    assert srv.chats() == []                                              # headless too: no model call
    kept = replies(tmp_path/'run.ipynb')
    assert [o['data']['text/plain'] for o in kept] == ['nums[::-1]', 'sorted(nums)']
    assert all('`nums.append(4)` is new or ran' in o['metadata']['boopiter']['stale'] for o in kept)
    assert text.count('[Stale: since this reply, ') == 2 and '--- reply (qwen3:1.7b, stale) ---' in text
    assert '0 prompts answered, 2 reused' in text
    nb = nbformat.read(tmp_path/'run.ipynb', as_version=4)
    nb.cells[5].source = f'%%prompt -m {MODEL} --fresh\nHow do I reverse nums?'   # asked again on purpose
    nbformat.write(nb, tmp_path/'fresh.ipynb')
    srv.script('nums[::-1], now with 4')
    assert run_notebook(tmp_path/'fresh.ipynb', tmp_path/'run2.ipynb', write=lambda s: None)
    assert len(srv.chats()) == 1                                          # that prompt only; the next one stays kept
    new, below = replies(tmp_path/'run2.ipynb')
    assert new['data']['text/plain'] == 'nums[::-1], now with 4'
    assert new['metadata']['boopiter']['previous'] == dict(model=MODEL, answer='nums[::-1]')
    assert below['data']['text/plain'] == 'sorted(nums)' and 'prompt `How do I reverse nums?`' in below['metadata']['boopiter']['stale']
