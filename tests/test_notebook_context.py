"""The whole notebook as context (issue 14), in real kernels against the test server: saved cells after a restart,
hidden and pinned cells, the frontend's unsaved view, dry runs, $`variables` and &`functions`, and the `notebook`
tools, whose changes go through a frontend (here a jupyter_client playing the extension, on a kernel subshell as
JupyterLab's comms are)."""

import json, re, threading, uuid
import nbformat, pytest
from kernels import KernelSession

pytestmark = pytest.mark.slow
MODEL = 'qwen3:1.7b'


def user_text(srv): return '\n'.join(m['content'] for m in srv.last_chat()['messages'] if m['role'] != 'system')


def saved(path, cells):
    "Write a notebook whose code cells already ran in an earlier session: (source, outputs, tags) or Markdown strings."
    nb = nbformat.v4.new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}})
    for i, c in enumerate(cells):
        if isinstance(c, str): cell = nbformat.v4.new_markdown_cell(c)
        else:
            src, outputs, tags = c
            cell = nbformat.v4.new_code_cell(src, outputs=outputs, execution_count=i + 1)
            if tags: cell.metadata['tags'] = list(tags)
        cell.id = f'c{i}'
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return nb


def stream(text): return nbformat.v4.new_output('stream', name='stdout', text=text)


def reply(text): return nbformat.v4.new_output('display_data', data={'text/plain': text, 'text/markdown': text},
                                               metadata={'boopiter': {'reply': True, 'status': 'done', 'model': MODEL}})


@pytest.fixture
def reopened(srv, tmp_path):
    "A saved notebook, reopened in a fresh kernel that has run nothing of it."
    path = tmp_path/'analysis.ipynb'
    saved(path, ['## Sales notes\nTotals are in euros.',
                 ('total = 1234 * 2\nprint(total)', [stream('2468\n')], ()),
                 ('secret_plan = "move to Mars"\nprint(secret_plan)', [stream('move to Mars\n')], ('boop-hide',)),
                 ('%%prompt\nWhat is total?', [reply('total is 2468.')], ()),
                 ('%%prompt\nAnd in dollars?', [], ())])
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(path)}) as k:
        assert k.run('%load_ext boopiter_ext').status == 'ok'
        yield k, path


def test_after_a_reopen_the_model_sees_the_saved_notebook_but_not_hidden_cells(reopened, srv):
    k, path = reopened
    srv.script('About 2,700 dollars.')
    res = k.run(f'%%prompt -m {MODEL}\nAnd in dollars?', cell_id='c4')
    assert res.status == 'ok'
    chat = srv.last_chat()['messages']
    assert [m['role'] for m in chat] == ['system', 'user', 'assistant', 'user']
    assert 'Sales notes' in chat[1]['content'] and 'print(total)' in chat[1]['content'] and '2468' in chat[1]['content']
    assert chat[1]['content'].rstrip().endswith('What is total?') and chat[2]['content'] == 'total is 2468.'
    assert 'Mars' not in json.dumps(chat)                                  # hidden: never sent
    ledger = res.reply['data']['text/markdown']
    assert 'In [2] (saved, from an earlier run)' in ledger and 'In [3] (saved, from an earlier run) · ~0 tokens · hidden' in ledger
    assert 'Prompt [4] and reply (saved, from an earlier run)' in ledger and '1 hidden' in ledger


def test_a_cell_run_here_replaces_its_saved_copy_and_live_tags_count(reopened, srv):
    k, path = reopened
    k.kc.execute('x = 1')   # unrelated, unsaved
    msg = k.kc.session.msg('execute_request', dict(code='total = 99\nprint(total)', silent=False, store_history=True,
                                                   user_expressions={}, allow_stdin=False, stop_on_error=True),
                           metadata={'cellId': 'c1', 'tags': ['boop-pin']})   # JupyterLab sends the cell's metadata
    k.kc.shell_channel.send(msg)
    k.collect(msg['header']['msg_id'])
    srv.script('99 then.')
    res = k.run(f'%%prompt -m {MODEL}\nAnd in dollars?', cell_id='c4')
    text = user_text(srv)
    assert 'total = 99' in text and '1234' not in text
    assert 'In [2] · ' not in srv.last_chat()['messages'][1]['content']   # labels are the model's, the ledger's below
    assert re.search(r'In \[\d+\] · ~\d+ tokens · sent \(pinned\)', res.reply['data']['text/markdown'])   # its live tag


def test_pinned_cells_are_never_dropped_and_the_rest_goes_in_one_step(srv, tmp_path):
    path = tmp_path/'big.ipynb'
    big = [('print("%s")' % ('abcdefghi'[i - 1] * 3000), [stream('abcdefghi'[i - 1] * 3000 + '\n')], ())
           for i in range(1, 10)]   # ~1,500 tokens each (letters: a digit costs a token)
    saved(path, [('x0 = 0', [], ('boop-pin',)), *big, ('%%prompt\nsummarise', [], ())])
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(path)}) as k:
        k.run('%load_ext boopiter_ext')
        k.run('%config BoopMagics.context_size = 8192')
        srv.script('ok')
        res = k.run(f'%%prompt -m {MODEL}\nsummarise', cell_id='c10')
    text = user_text(srv)
    assert 'x0 = 0' in text                                                  # pinned: kept though it is the oldest
    md = res.reply['metadata']['boopiter']['context']
    assert md['dropped'] >= 4 and md['tokens'] <= 0.8 * (8192 - 200)        # dropped to 3/4 of the budget, not just under


def test_the_frontends_view_brings_unsaved_notes_new_cells_and_tags(reopened, srv):
    k, path = reopened
    cid = uuid.uuid4().hex
    cells = [dict(id='c0', cell_type='markdown', source='## Sales notes\nTotals are in **dollars** now.', tags=[]),
             dict(id='new', cell_type='markdown', source='Remember the 10% discount.', tags=[]),
             dict(id='c1', cell_type='code', source='total = 1234 * 2\nprint(total)', tags=['boop-hide']),
             dict(id='c4', cell_type='code', source='%%prompt\nAnd in dollars?', tags=[])]
    msg = k.kc.session.msg('comm_open', dict(comm_id=cid, target_name='boopiter',
                                             data=dict(type='hello', version=1, binding=None, cells=cells)))
    k.kc.shell_channel.send(msg)
    k.collect(msg['header']['msg_id'], shell_reply=False)
    srv.script('ok')
    res = k.run(f'%%prompt -m {MODEL}\nAnd in dollars?', cell_id='c4')
    text = user_text(srv)
    assert 'dollars** now' in text and '10% discount' in text and 'euros' not in text
    assert 'print(total)' not in text and 'Mars' not in text                # hidden in the frontend, and gone from it
    assert 'Markdown note (unsaved edit)' in res.reply['data']['text/markdown']


def test_a_dry_run_sends_nothing_and_shows_everything(reopened, srv):
    k, path = reopened
    k.run('import numpy as np\ngrid = np.arange(12).reshape(3, 4)\napi_key = "sk-" + str(123 * 1000 + 456)\n'
          'def double(x:int)->int:\n    "Twice x"\n    return 2 * x')
    before = len(srv.requests)
    res = k.run(f'%%prompt -m {MODEL} --dry-run\nIs $`grid` ok for &`double`? And $`api_key`?', cell_id='c4')
    assert res.status == 'ok' and not [r for r in srv.requests[before:] if r.path == '/api/chat']
    md = res.outputs[0]['data']['text/markdown']
    assert md.startswith('*Dry run: nothing was sent. Model: qwen3:1.7b (Ollama)')
    assert 'double(x: int) -&gt; int' in md or 'double(x: int) -> int' in md
    assert 'ndarray, shape (3, 4), dtype int64' in md and 'sk-123456' not in md and 'named like a secret' in md
    assert '<details><summary>system · ~' in md and '<details><summary>user · ~' in md and 'What is total?' in md


def test_variables_and_functions_by_reference_reach_the_model(kernel, srv):
    kernel.run('import numpy as np\ngrid = np.arange(12).reshape(3, 4)\ntoken = "t-" + str(40 + 2)\n'
               'def double(x:int)->int:\n    "Twice x"\n    return 2 * x')
    srv.script('```python\ndouble(3)\n```')
    srv.script('6.')
    res = kernel.run(f'%%prompt -m {MODEL} --auto\nDouble 3 with &`double`; also look at $`grid` and $`token`.')
    text = json.dumps(srv.chats()[-2])
    assert 'ndarray, shape (3, 4)' in text and 't-42' not in text and 'def double(' in text
    replies = [o for o in res.outputs if o.get('metadata', {}).get('boopiter', {}).get('reply')]
    assert replies[-1]['data']['text/plain'] == '6.' and '[ok] double(3)\n6' in res.outputs[1]['data']['text/plain']


def subshell(k)->str:
    "A kernel subshell, as JupyterLab opens one for its comms (their messages are handled while a cell runs)."
    msg = k.kc.session.msg('create_subshell_request', {})
    k.kc.control_channel.send(msg)
    return k.kc.get_control_msg(timeout=10)['content']['subshell_id']


def test_notebook_tools_read_everywhere_and_change_it_only_through_the_frontend(reopened, srv):
    k, path = reopened
    k.run('%boop tools notebook on')
    srv.script('```python\nlist_cells()\nread_cell("c1")\nsearch_notebook("total")\nedit_cell("c1", "total = 0")\n```')
    srv.script('Refused without a frontend.')
    k.run(f'%%prompt -m {MODEL} --auto\nPlease fix the total cell', cell_id='c4')
    assert k.prompts == []   # an edit is reviewed in the page, as a diff: no yes asked here, and with no page, refused
    results = json.dumps(srv.requests[-1].json)
    assert 'Mars' not in results and 'c2' not in results   # hidden cells reach no tool
    assert '1 \\u00b7 c1 \\u00b7 code \\u00b7 total = 1234 * 2' in results or '1 · c1 · code · total = 1234 * 2' in results
    assert 'needs the boopiter extension in JupyterLab or Notebook 7' in results, results[-1500:]
    # now a frontend, answering on its own subshell as JupyterLab does
    sid, cid = subshell(k), uuid.uuid4().hex
    msg = k.kc.session.msg('comm_open', dict(comm_id=cid, target_name='boopiter', data=dict(type='hello', version=1,
                                                                                        binding=None)))
    msg['header']['subshell_id'] = sid
    k.kc.shell_channel.send(msg)
    edits = []
    def frontend():   # answer the kernel's edit requests the way the extension does (here: every one is applied)
        while len(edits) < 1:
            m = k.kc.get_iopub_msg(timeout=30)
            data = m['content'].get('data') if m['msg_type'] == 'comm_msg' else None
            if isinstance(data, dict) and data.get('type') == 'edit':
                edits.append(data)
                reply = k.kc.session.msg('comm_msg', dict(comm_id=m['content']['comm_id'], data=dict(
                    type='edit_result', id=data['id'], ok=True, message='done: cell c1 changed (Undo reverts it)')))
                reply['header']['subshell_id'] = sid
                k.kc.shell_channel.send(reply)
    srv.script('```python\nread_cell("c1")\nedit_cell("c1", "total = 0")\n```')
    srv.script('Changed.')
    watcher = threading.Thread(target=frontend, daemon=True)
    send = k.send(f'%%prompt -m {MODEL} --auto\nPlease fix the total cell', cell_id='c4')
    watcher.start()
    watcher.join(40)
    k.collect(send, timeout=60)
    assert edits and edits[0]['op'] == 'edit' and edits[0]['cell'] == 'c1' and edits[0]['expect'].startswith('total = 1234')
    assert edits[0]['prompt'] == 'c4'   # the prompt cell asking: the page's Undo bar for its reply's changes is there
    assert 'done: cell c1 changed' in json.dumps(srv.requests[-1].json)
