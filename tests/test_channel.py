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
                                                                                ('pdf', False)]
    assert sent(res, 'binding') == [dict(type='binding', binding={})]
    shown = kernel.run('%boop model smollm2:135m')   # a pick from code reaches the frontend too
    assert 'boopiter binding · model smollm2:135m' in shown.outputs[-1]['data']['text/plain']
    msg = kernel.kc.session.msg('comm_msg', dict(comm_id=cid, data=dict(type='pick', changes=dict(model=MODEL, auto=True))))
    kernel.kc.shell_channel.send(msg)
    res = kernel.collect(msg['header']['msg_id'], shell_reply=False)
    binding = sent(res, 'binding')[0]['binding']
    assert binding['model'] == MODEL and binding['auto'] is True and binding['picked_at']
    assert sent(res, 'state')[-1]['state']['answering'] == dict(model=MODEL, why='notebook binding', auto=False, reasoning=False,
                                                                context_length=40960, size=1_359_000_000)
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
                 dict(type='pick', changes=dict(model=['x']))):
        msg = kernel.kc.session.msg('comm_msg', dict(comm_id=cid, data=data))
        kernel.kc.shell_channel.send(msg)
        errors = sent(kernel.collect(msg['header']['msg_id'], shell_reply=False), 'error')
        assert len(errors) <= 1 and all('\n' not in e['message'] for e in errors)
    assert kernel.run('%boop status').status == 'ok'
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
    assert data['kind'] == 'reply' and data['status'] == 'done' and data['markdown'] == 'Use:\n\n```python\nprint(42)\n```'
    assert data['summary'].startswith(MODEL) and any(r.startswith('Model: qwen3:1.7b') for r in data['details'])
    waiting = next(m[2]['data'] for m in res.messages if m[1] == 'display_data')
    assert waiting['application/vnd.boopiter.reply+json']['status'] == 'waiting'   # one view from the first message on
