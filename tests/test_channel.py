"""The frontend's channel in real kernels, driven as the extension drives it: comm opens and messages over jupyter_client.

The kernel half of the protocol in js/src/protocol/messages.ts: hello (with the notebook's binding), state, picks, the binding
sent back for the notebook's metadata, refresh, errors; and the faces that change once a frontend said hello (no
widgets, no Run buttons: the extension's menu and reply actions take their place)."""

import uuid
import pytest
from kernels import KernelSession

pytestmark = pytest.mark.slow
MODEL = 'qwen3:1.7b'


def comm_open(k, data, target='boopiter'):
    "Open a comm as the extension does; (comm id, the kernel's messages on it)."
    cid = uuid.uuid4().hex
    msg = k.kc.session.msg('comm_open', dict(comm_id=cid, target_name=target, data=data))
    k.kc.shell_channel.send(msg)
    res = k.collect(msg['header']['msg_id'], shell_reply=False)
    return cid, res


def soon()->str:
    "A pick stamp a minute from now: newer than any this kernel made, not so far ahead that it counts as none."
    import datetime
    return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=1)).isoformat(timespec='milliseconds')


def sent(res, kind=None):
    "The data of the kernel's comm messages in `res` (of one `type`)."
    return [m[2]['data'] for m in res.messages if m[1] == 'comm_msg' and (kind is None or m[2]['data'].get('type') == kind)]


def test_a_frontend_learns_whether_boopiter_is_loaded_and_is_announced_to_when_it_loads(srv, tmp_path):
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        _, res = comm_open(k, dict(type='hello', version=1, binding=None))
        assert [m[1] for m in res.messages if m[1].startswith('comm')] == ['comm_close']   # not loaded: closed at once
        res = k.run('%load_ext boopiter_ext')
        opened = [m[2] for m in res.messages if m[1] == 'comm_open']
        assert [(o['target_name'], o['data']) for o in opened] == [('boopiter', dict(type='announce', version=1))]
        res = k.run('%unload_ext boopiter_ext')
        assert opened[0]['comm_id'] in [m[2]['comm_id'] for m in res.messages if m[1] == 'comm_close']


def test_hello_gets_the_state_and_a_pick_comes_back_as_the_binding_everywhere(kernel, srv):
    cid, res = comm_open(kernel, dict(type='hello', version=1, binding=None))
    state = sent(res, 'state')[0]['state']
    assert state['answering']['model'] == 'smollm2:135m' and state['answering']['why'].startswith('auto: ')
    assert [m['id'] for m in state['models'] if m['source'] == 'ollama'] == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']
    assert {'tools', 'thinking'} <= set(next(m for m in state['models'] if m['id'] == MODEL)['capabilities'])
    assert [(t['name'], t['on']) for t in state['options']['tool_sources']] == [('kernel', True), ('files', True),
                                                                                ('notebook', False), ('web', False),
                                                                                ('pdf', False), ('nbfiles', False),
                                                                                ('machine', False), ('ci', False)]
    assert sent(res, 'binding') == [dict(type='binding', binding={})]
    shown = kernel.run('%boop model smollm2:135m')   # a pick from code reaches the frontend too
    assert 'boopiter binding · model smollm2:135m' in shown.outputs[-1]['data']['text/plain']
    msg = kernel.kc.session.msg('comm_msg', dict(comm_id=cid, data=dict(type='pick', changes=dict(model=MODEL, auto=True))))
    kernel.kc.shell_channel.send(msg)
    res = kernel.collect(msg['header']['msg_id'], shell_reply=False)
    binding = sent(res, 'binding')[0]['binding']
    assert binding['model'] == MODEL and binding['auto'] is True and binding['picked_at']
    assert sent(res, 'state')[-1]['state']['answering'] == dict(model=MODEL, why='notebook binding', auto=False, reasoning=False,
                                                                window=4096, context_length=40960, size=1_359_000_000)
    updates = [m[2] for m in res.messages if m[1] == 'update_display_data']   # the binding's display, kept current
    assert updates and updates[-1]['data']['application/vnd.boopiter.settings+json']['model'] == MODEL
    srv.script('Picked.')
    assert kernel.run('%%prompt\nWho answers?').reply['metadata']['boopiter']['model'] == MODEL


def test_a_newer_binding_in_the_notebooks_metadata_applies_an_older_one_does_not(kernel, srv):
    kernel.run('%boop model smollm2:135m')
    old = dict(model='gemma3:4b', picked_at='2020-01-01T00:00:00.000+00:00')
    _, res = comm_open(kernel, dict(type='hello', version=1, binding=old))
    assert sent(res, 'binding')[0]['binding']['model'] == 'smollm2:135m'   # this kernel's pick is newer
    new = dict(model='gemma3:4b', picked_at='2100-01-01T00:00:00.000+00:00'.replace('2100', '2999'))
    _, res = comm_open(kernel, dict(type='hello', version=1, binding=new))   # a stamp from the future counts as none
    assert sent(res, 'binding')[0]['binding']['model'] == 'smollm2:135m'
    _, res = comm_open(kernel, dict(type='hello', version=1, binding=dict(model='gemma3:4b', picked_at=soon())))
    assert sent(res, 'binding')[0]['binding']['model'] == 'gemma3:4b'
    hostile = dict(model='anthropic/claude-x', picked_at=soon())   # a provider no setting names: screened like a file's
    _, res = comm_open(kernel, dict(type='hello', version=1, binding=hostile))
    assert sent(res, 'binding')[0]['binding']['model'] == 'gemma3:4b'


def test_every_state_lists_the_models_even_one_sent_before_the_hello_asked_for_them(srv, tmp_path):
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        k.run('%load_ext boopiter_ext')
        # a reopened notebook's binding changes the kernel's: its state goes out before the hello's own
        _, res = comm_open(k, dict(type='hello', version=1, binding=dict(model='gemma3:4b', picked_at=soon())))
        states = [m['state'] for m in sent(res, 'state')]
        assert len(states) >= 2 and all(st['answering']['model'] == 'gemma3:4b' for st in states)
        assert all([m['id'] for m in st['models'] if m['source'] == 'ollama'] == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']
                   and st['answering']['context_length'] == 131072 for st in states), states


def test_bad_messages_get_one_error_line_and_the_kernel_carries_on(kernel, srv):
    cid, _ = comm_open(kernel, dict(type='hello', version=1, binding=None))
    for data in (dict(type='pick', changes=dict(host='http://evil')), dict(type='dance'), 'not a dict',
                 dict(type='pick', changes=dict(model=['x'])), dict(type='allow', items='web'), dict(type='allow'),
                 dict(type='allow', items=[{'web': 1}, ['auto'], None, 'web', 'auto'] * 20),
                 dict(type='allow', items=['web', 'auto', 'notebook'])):   # nothing is proposed: nothing to accept
        msg = kernel.kc.session.msg('comm_msg', dict(comm_id=cid, data=data))
        kernel.kc.shell_channel.send(msg)
        errors = sent(kernel.collect(msg['header']['msg_id'], shell_reply=False), 'error')
        assert len(errors) <= 1 and all('\n' not in e['message'] for e in errors)
    assert kernel.run('%boop status').status == 'ok'
    assert kernel.value('sorted(get_ipython().magics_manager.registry["BoopMagics"].assistant.consent.granted)') == '[]'
    assert 'host' not in kernel.value('get_ipython().magics_manager.registry["BoopMagics"].binding()')


def test_with_a_frontend_there_are_no_widgets_and_replies_carry_the_data_it_renders(kernel, srv):
    res = kernel.run('%boop')
    assert any(m[1] == 'comm_open' and m[2]['target_name'] == 'jupyter.widget' for m in res.messages)   # no frontend yet
    assert 'boopiter brain menu (a live widget' in res.outputs[0]['data']['text/plain']   # never `VBox(...)`
    comm_open(kernel, dict(type='hello', version=1, binding=None))
    res = kernel.run('%boop')
    assert not any(m[1] == 'comm_open' for m in res.messages)
    assert res.outputs[0]['text'].startswith('The brain menu is in the notebook toolbar. Answering: auto → smollm2:135m (')
    srv.script('Use:\n\n```python\nprint(42)\n```\n')
    res = kernel.run(f'%%prompt -m {MODEL}\nShow me', cell_id='c1')
    assert [o['output_type'] for o in res.outputs] == ['display_data']   # the extension draws the code actions
    data = res.reply['data']['application/vnd.boopiter.reply+json']
    assert data['kind'] == 'reply' and data['status'] == 'done' and data['blocks'] == ['Use:', '```python\nprint(42)\n```']
    assert data['summary'].startswith(MODEL) and any(r.startswith('Model: qwen3:1.7b') for r in data['details'])
    waiting = next(m[2]['data'] for m in res.messages if m[1] == 'display_data')
    assert waiting['application/vnd.boopiter.reply+json']['status'] == 'waiting'   # one view from the first message on


# -- Stop, and the state the menu shows after a prompt (issue 22.3, 22.4)

def subshell(k)->str:
    "A kernel subshell, as JupyterLab starts one for the comms of a target: its messages are read while a cell runs."
    msg = k.kc.session.msg('create_subshell_request', {})
    k.kc.control_channel.send(msg)
    while (rep := k.kc.control_channel.get_msg(timeout=10))['parent_header'].get('msg_id') != msg['header']['msg_id']:
        pass
    assert rep['content']['status'] == 'ok', rep['content']
    return rep['content']['subshell_id']


def on_subshell(k, sid, msg_type, content)->str:
    msg = k.kc.session.msg(msg_type, content)
    msg['header']['subshell_id'] = sid
    k.kc.shell_channel.send(msg)
    return msg['header']['msg_id']


REPLY_MIME = 'application/vnd.boopiter.reply+json'


@pytest.mark.parametrize('fault', [None, 'stall'])
def test_stop_ends_the_reply_as_interrupted_and_the_cell_without_an_error(kernel, srv, fault):
    import time
    sid, cid = subshell(kernel), uuid.uuid4().hex
    kernel.collect(on_subshell(kernel, sid, 'comm_open', dict(comm_id=cid, target_name='boopiter',
                                                               data=dict(type='hello', version=1, binding=None))),
                   shell_reply=False)
    if fault: srv.script('first words then nothing', fault='stall', after=2, stall_s=30)   # no token comes: a read blocks
    else: srv.script('tick ' * 1000, delay=0.02)
    msg_id = kernel.send(f'%%prompt -m {MODEL}\nCount forever', cell_id='p1')
    at = []
    def stop_when_streaming(kind, content):
        data = content.get('data', {}).get(REPLY_MIME) or {}
        if kind == 'update_display_data' and data.get('status') == 'streaming' and data.get('blocks') and not at:
            at.append(time.monotonic())
            on_subshell(kernel, sid, 'comm_msg', dict(comm_id=cid, data=dict(type='stop', cell_id='p1')))
    res = kernel.collect(msg_id, on_message=stop_when_streaming)
    assert at and res.status == 'ok' and res.error is None, res.outputs   # stopping is not an error
    assert [o['output_type'] for o in res.outputs] == ['display_data']   # the reply, and nothing else
    data = res.reply['data']
    assert data[REPLY_MIME]['status'] == 'interrupted' and res.reply['metadata']['boopiter']['status'] == 'interrupted'
    assert data['text/plain'].startswith('first words' if fault else 'tick ') and data['text/plain'].endswith('*(interrupted)*')
    assert res.messages[-1][0] - at[0] < 2                               # at once, even while no token comes
    stream = srv.streams[-1]
    assert stream.disconnected and not stream.completed                  # hung up: the server stops generating
    assert kernel.value('"still usable"') == "'still usable'"
    srv.script('Done.')
    assert kernel.run(f'%%prompt -m {MODEL}\nAgain', cell_id='p2').reply['data'][REPLY_MIME]['status'] == 'done'


def test_stop_for_another_cell_or_with_nothing_streaming_changes_nothing(kernel, srv):
    sid, cid = subshell(kernel), uuid.uuid4().hex
    kernel.collect(on_subshell(kernel, sid, 'comm_open', dict(comm_id=cid, target_name='boopiter',
                                                               data=dict(type='hello', version=1, binding=None))),
                   shell_reply=False)
    kernel.collect(on_subshell(kernel, sid, 'comm_msg', dict(comm_id=cid, data=dict(type='stop'))), shell_reply=False)
    srv.script('one two three four five six', delay=0.05)
    msg_id = kernel.send(f'%%prompt -m {MODEL}\nCount', cell_id='p1')
    sent_stop = []
    def stop_other(kind, content):
        if kind == 'update_display_data' and not sent_stop:
            sent_stop.append(on_subshell(kernel, sid, 'comm_msg', dict(comm_id=cid, data=dict(type='stop', cell_id='p9'))))
    res = kernel.collect(msg_id, on_message=stop_other)
    assert sent_stop and res.status == 'ok'
    assert res.reply['data'][REPLY_MIME]['status'] == 'done' and res.reply['data']['text/plain'] == 'one two three four five six'


def drain_states(k, timeout=10, until=lambda st: False)->list:
    "The states the kernel sends on its comms from now, whichever request they answer, until `until(state)` or `timeout`."
    import queue, time
    got, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try: msg = k.kc.get_iopub_msg(timeout=0.1)
        except queue.Empty: continue
        data = msg['content'].get('data') if msg['msg_type'] == 'comm_msg' else None
        if isinstance(data, dict) and data.get('type') == 'state':
            got.append(data['state'])
            if until(data['state']): break
    return got


def test_a_prompt_that_finds_ollama_down_or_back_tells_the_menu_at_once(kernel, srv):
    from ollama_server import free_port
    _, res = comm_open(kernel, dict(type='hello', version=1, binding=None))
    assert sent(res, 'state')[-1]['state']['problems'] == {}
    kernel.run(f"import os; os.environ['OLLAMA_HOST'] = '127.0.0.1:{free_port()}'")   # Ollama goes away
    res = kernel.run(f'%%prompt -m {MODEL}\nAre you there?')
    assert res.status == 'error' and res.error['ename'] == 'OllamaUnreachable'
    state = sent(res, 'state')[-1]['state']                              # pushed by the prompt itself, no Refresh
    assert set(state['problems']) == {'ollama'} and 'ollama serve' in state['problems']['ollama']
    assert [(m['id'], bool(m.get('offline'))) for m in state['models'] if m['source'] == 'ollama'] == [
        ('gemma3:4b', True), ('qwen3:1.7b', True), ('smollm2:135m', True)]
    kernel.run(f"os.environ['OLLAMA_HOST'] = {srv.host!r}")              # back
    srv.script('Here.')
    res = kernel.run(f'%%prompt -m {MODEL}\nAre you there now?')
    assert res.status == 'ok'
    states = [m for m in (s['state'] for s in sent(res, 'state'))] + drain_states(kernel, until=lambda st: not st['problems'])
    assert states and states[-1]['problems'] == {} and not [m for m in states[-1]['models'] if m.get('offline')]


def test_the_state_names_the_context_window_the_next_request_uses(kernel, srv):
    cid, res = comm_open(kernel, dict(type='hello', version=1, binding=None))
    pick = lambda changes: sent(kernel.comm(cid, dict(type='pick', changes=changes)), 'state')[-1]['state']['answering']
    who = pick(dict(model=MODEL))
    assert who['window'] == 4096 and who['context_length'] == 40960
    srv.script('Small.')
    kernel.run('%%prompt\nhi')
    assert srv.last_chat()['options']['num_ctx'] == who['window']        # one number: the one the request uses
    who = pick(dict(context_size=8192))
    srv.script('Set.')
    kernel.run('%%prompt\nhi again')
    assert who['window'] == 8192 == srv.last_chat()['options']['num_ctx']


def test_the_dry_run_in_a_cell_carries_what_the_extension_draws_folded(kernel, srv):
    res = kernel.run(f'%%prompt -m {MODEL} --dry-run\nWhat is 2 + 2?')
    [out] = res.outputs
    preview = out['data']['application/vnd.boopiter.preview+json']
    assert preview['markdown'] == out['data']['text/markdown'] and preview['text'] == out['data']['text/plain']
    assert '<details><summary>system · ~' in preview['markdown'] and '<details><summary>user · ~' in preview['markdown']
    assert srv.chats() == []
