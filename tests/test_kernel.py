"""End to end in real kernels: streaming, context on the wire, and every fault as a message in the cell."""

import json, time
import nbformat, pytest
from nbclient import NotebookClient
from ollama_server import free_port
from kernels import KernelSession

pytestmark = pytest.mark.slow
MODEL = 'qwen3:1.7b'


def user_text(srv): return srv.last_chat()['messages'][-1]['content']


def assert_one_paragraph_error(res, ename):
    assert res.status == 'error'
    err = res.error
    assert err['ename'] == ename and len(err['traceback']) == 1, err   # a message, not a traceback wall
    assert '\n' not in err['traceback'][0]


def test_reply_streams_into_one_display_throttled_and_ends_exact(kernel, srv):
    reply = ''.join(f'word{i} ' for i in range(150)) + '\n\n```python\nprint("done")\n```\n'
    srv.script(reply, delay=0.01)
    res = kernel.run(f'%%prompt -m {MODEL}\nTell me a story', cell_id='c1')   # a cell someone can click: Run buttons
    assert res.status == 'ok'
    displays = [m for m in res.messages if m[1] in ('display_data', 'update_display_data') and 'text/markdown' in m[2]['data']]
    ids = {m[2]['transient']['display_id'] for m in displays}
    assert len(ids) == 1 and sum(m[1] == 'display_data' for m in displays) == 1   # one display handle per reply
    assert res.count('display_data') == 2                               # and the Run buttons for its python block
    assert {tuple(sorted(m[2]['data'])) for m in displays} == {('application/vnd.boopiter.reply+json', 'text/markdown',
                                                                'text/plain')}
    updates = [m for m in displays if m[1] == 'update_display_data']
    span = updates[-1][0] - displays[0][0]
    assert 5 <= len(updates) <= 10 * span + 3                            # streamed, at most ~10 updates/s
    assert res.reply['data']['text/plain'] == reply                     # the final update is exact
    md = res.reply['metadata']['boopiter']
    assert md['model'] == MODEL and md['status'] == 'done' and md['route'] == 'Ollama'
    assert '<details><summary>Reply details' in res.reply['data']['text/markdown']


def test_notebook_order_markdown_and_rerun_replacement(srv, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell('# Sales analysis\nWe compare two regions.', id='md0'),
                nbformat.v4.new_code_cell('a = 1', id='c1'), nbformat.v4.new_code_cell('b = a + 1', id='c2'),
                nbformat.v4.new_code_cell('%%prompt\nWhat is b?', id='p3'),
                nbformat.v4.new_code_cell('below = True', id='c4')]
    path = tmp_path/'analysis.ipynb'
    nbformat.write(nb, path)
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'JPY_SESSION_NAME': str(path)}) as k:
        k.run('%load_ext boopiter_ext')
        k.run('below = True', cell_id='c4')
        k.run('a = 1', cell_id='c1')
        k.run('b = 0  # first version', cell_id='c2')
        k.run('b = a + 1\nprint("b is", b)', cell_id='c2')              # re-run with new source: replaces
        res = k.run(f'%%prompt -m {MODEL}\nWhat is b?', cell_id='p3')
        assert res.status == 'ok'
    text = user_text(srv)
    order = [text.index(s) for s in ('# Sales analysis', 'a = 1', 'b = a + 1', 'b is 2', 'What is b?')]
    assert order == sorted(order)
    assert 'first version' not in text and 'below = True' not in text


def test_cells_run_before_loading_still_count_with_saved_outputs(srv, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('total = 40 + 2\nprint("total", total)', id='c1',
                                          outputs=[nbformat.v4.new_output('stream', name='stdout', text='total 42\n')]),
                nbformat.v4.new_code_cell('%load_ext boopiter_ext', id='c2'),
                nbformat.v4.new_code_cell('%%prompt\nWhat is total?', id='p3')]
    path = tmp_path/'early.ipynb'
    nbformat.write(nb, path)
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(path)}) as k:
        k.run('total = 40 + 2\nprint("total", total)')                  # no cell ids: placed by source
        k.run('%load_ext boopiter_ext')
        assert k.run(f'%%prompt -m {MODEL}\nWhat is total?').status == 'ok'
    text = user_text(srv)
    assert 'total = 40 + 2' in text and 'total 42' in text


def test_long_outputs_are_clipped_and_the_oldest_cells_dropped(kernel, srv):
    kernel.run('%config BoopMagics.context_size = 2048')
    kernel.run('%config BoopMagics.clip = 1000')
    for i in range(6): kernel.run(f'old_{i} = "{"z" * 1500}"')
    kernel.run('print("".join(f"line {n}\\n" for n in range(5000)))')
    res = kernel.run(f'%%prompt -m {MODEL}\nSummarise the output.')
    assert res.status == 'ok'
    body = srv.last_chat()
    text = body['messages'][-1]['content']
    assert '… [clipped' in text and 'line 0\n' in text and 'line 4999' in text and 'line 2500\n' not in text
    assert 'old_0' not in text and text.endswith('Summarise the output.')
    assert body['options']['num_ctx'] == 2048
    ctx = res.reply['metadata']['boopiter']['context']
    assert ctx['dropped'] >= 1 and ctx['clipped'] == 1 and ctx['window'] == 2048
    assert 'dropped' in res.reply['data']['text/markdown']              # the ledger says so


def test_num_ctx_is_sized_to_the_prompt_and_capped_by_the_model(kernel, srv):
    kernel.run(f'%%prompt -m {MODEL}\nhi')
    assert srv.last_chat()['options']['num_ctx'] == 4096
    kernel.run('big = "' + 'y' * 30000 + '"')
    kernel.run(f'%%prompt -m {MODEL}\nhi again')
    assert srv.last_chat()['options']['num_ctx'] == 16384


def test_earlier_prompt_replies_are_turns_and_a_rerun_replaces_its_reply(kernel, srv):
    srv.script('First reply.')
    kernel.run(f'%%prompt -m {MODEL}\nQuestion one', cell_id='p1')
    srv.script('Second take.')
    kernel.run(f'%%prompt -m {MODEL}\nQuestion one, better', cell_id='p1')
    rerun = json.dumps(srv.last_chat())
    assert 'Question one, better' in rerun and 'First reply.' not in rerun and '"Question one"' not in rerun
    srv.script('', thinking='private reasoning')
    kernel.run(f'%%prompt -m {MODEL}\nQuestion two', cell_id='p2')
    msgs = srv.last_chat()['messages']
    assert [m['role'] for m in msgs] == ['system', 'user', 'assistant', 'user']
    assert msgs[1]['content'] == 'Question one, better' and msgs[2]['content'] == 'Second take.'
    kernel.run(f'%%prompt -m {MODEL}\nQuestion three', cell_id='p3')
    assert 'private reasoning' not in json.dumps(srv.last_chat())
    assert 'Reply details' not in json.dumps(srv.last_chat())


def test_options_reach_the_wire_from_settings_and_cell(kernel, srv):
    kernel.run('%config BoopMagics.keep_alive = "5"')
    kernel.run('%config BoopMagics.max_tokens = 300')
    kernel.run(f'%%prompt -m ollama_chat/{MODEL} --think h\nhi')
    body = srv.last_chat()
    assert body['model'] == MODEL and body['keep_alive'] == '5m' and body['think'] is True
    assert body['options']['num_predict'] == 300
    res = kernel.run('%%prompt -m smollm2:135m --think h\nhi')
    assert res.status == 'error' and 'not a thinking model' in res.text


# -- faults: each one paragraph in the cell, nothing lost, kernel usable

def test_ollama_unreachable(srv, tmp_path):
    with KernelSession(tmp_path, env={'OLLAMA_HOST': f'127.0.0.1:{free_port()}'}) as k:
        k.run('%load_ext boopiter_ext')
        res = k.run(f'%%prompt -m {MODEL}\nhello')
        assert_one_paragraph_error(res, 'OllamaUnreachable')
        assert 'ollama serve' in res.error['evalue'] and 'OLLAMA_HOST' in res.error['evalue']
        assert k.value('1 + 1') == '2'


def test_model_not_found(kernel, srv):
    res = kernel.run('%%prompt -m llama9:70b\nhello')
    assert_one_paragraph_error(res, 'OllamaModelNotFound')
    assert 'ollama pull llama9:70b' in res.error['evalue']


def test_http_error_body_is_relayed(kernel, srv):
    srv.script(fault='http_error', status=500, body={'error': 'CUDA out of memory'})
    res = kernel.run(f'%%prompt -m {MODEL}\nhello')
    assert_one_paragraph_error(res, 'OllamaError')
    assert 'CUDA out of memory' in res.error['evalue'] and '500' in res.error['evalue']


@pytest.mark.parametrize('fault,ename,marker', [('drop', 'ReplyBroken', 'connection lost'),
                                                ('error_line', 'OllamaError', 'failed'),
                                                ('malformed', 'OllamaError', 'failed')])
def test_mid_reply_faults_keep_the_partial_reply(kernel, srv, fault, ename, marker):
    srv.script('kept words then lost', fault=fault, after=2)
    res = kernel.run(f'%%prompt -m {MODEL}\nhello')
    assert_one_paragraph_error(res, ename)
    assert res.reply['data']['text/plain'] == f'kept words \n\n*({marker})*'
    assert res.reply['metadata']['boopiter']['status'] in ('broken', 'error')
    assert 'partial reply is kept' in res.error['evalue']
    assert kernel.value('2 * 21') == '42'


def test_no_token_for_timeout_seconds(kernel, srv):
    kernel.run('%config BoopMagics.timeout = 1.0')
    srv.script('first then silence', fault='stall', after=1)
    t = time.monotonic()
    res = kernel.run(f'%%prompt -m {MODEL}\nhello')
    assert time.monotonic() - t < 6
    assert_one_paragraph_error(res, 'ReplyStalled')
    assert res.reply['data']['text/plain'].startswith('first ') and '(timed out)' in res.reply['data']['text/plain']


def test_interrupt_stops_within_two_seconds_keeps_the_partial_and_hangs_up(kernel, srv):
    srv.script('tick ' * 1000, delay=0.02)
    msg_id = kernel.send(f'%%prompt -m {MODEL}\nCount forever')
    at, updates = [], []   # counted in the server's own pieces (one every 20 ms), not in seconds of a busy machine
    def interrupt_when_streaming(kind, content):
        if kind == 'update_display_data': updates.append(content)
        if len(updates) == 3 and not at:                                     # a few tokens in
            at.append(srv.streams[-1].pieces)
            kernel.km.interrupt_kernel()
    res = kernel.collect(msg_id, on_message=interrupt_when_streaming)
    assert_one_paragraph_error(res, 'ReplyInterrupted')
    text = res.reply['data']['text/plain']
    assert text.startswith('tick tick') and text.endswith('*(interrupted)*')
    assert res.reply['metadata']['boopiter']['status'] == 'interrupted'
    stream = srv.streams[-1]
    deadline = time.monotonic() + 2
    while not stream.disconnected and time.monotonic() < deadline: time.sleep(0.01)
    assert stream.disconnected and stream.pieces - at[0] < 100 and res.messages[-1][0] >= stream.disconnect_t   # < 2 s of 20
    assert kernel.value('"still usable"') == "'still usable'"


def test_nbclient_saves_the_exact_full_reply_of_5000_tokens(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    pieces = [f'tok{i} ' if i % 97 else f'tok{i}\n\n' for i in range(5000)]
    srv.script(pieces)
    nb = nbformat.v4.new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                                            'language': 'python'}})
    nb.cells = [nbformat.v4.new_code_cell('%load_ext boopiter_ext'),
                nbformat.v4.new_code_cell('for i in range(3): print(i)'),
                nbformat.v4.new_code_cell(f'%%prompt -m {MODEL}\nWrite a long answer.')]
    NotebookClient(nb, timeout=120, resources={'metadata': {'path': str(tmp_path)}}).execute()
    nbformat.write(nb, tmp_path/'out.ipynb')
    saved = nbformat.read(tmp_path/'out.ipynb', as_version=4)
    [out] = saved.cells[2].outputs
    assert out['data']['text/plain'] == ''.join(pieces)
    assert ''.join(pieces).strip() in out['data']['text/markdown']
    assert out['metadata']['boopiter']['model'] == MODEL and out['metadata']['boopiter']['completion_tokens'] == 5000
    assert 'display_id' not in json.dumps(out)


HOOKS = ("ip = get_ipython(); (len(ip.display_pub._hooks), len(ip.displayhook._hooks), "
         "len(ip.events.callbacks['pre_run_cell']), len(ip.events.callbacks['post_run_cell']), "
         "'prompt' in ip.magics_manager.magics['cell'], 'boop' in ip.magics_manager.magics['line'])")


def test_unload_in_a_kernel_removes_every_hook(srv, tmp_path):
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        before = k.value(HOOKS)
        k.run('%load_ext boopiter_ext')
        loaded = k.value(HOOKS)
        k.run('%unload_ext boopiter_ext')
        assert k.value(HOOKS) == before != loaded
        assert loaded.endswith('True, True)')
        assert k.run('%%prompt\nhi').status == 'error'                    # the magic is gone
