"""The notebook stays usable while a reply streams (issue 24), in real kernels driven as JupyterLab drives them.

JupyterLab and Notebook 7 send a cell's id and answer input (`send(lab=True)`); boopiter's extension says hello on a
comm over a kernel subshell. Then a prompt cell ends once its request is on its way and the reply streams on into it
(updates by display id, every message with the prompt's request as its parent) while other cells run. A headless
client (nbclient, papermill: no input) keeps the cell running until the reply ends, so a saved notebook holds it."""

import time, uuid
import pytest
from kernels import KernelSession
from test_channel import on_subshell, subshell

pytestmark = pytest.mark.slow
MODEL, REPLY_MIME = 'qwen3:1.7b', 'application/vnd.boopiter.reply+json'


def with_frontend(k)->tuple:
    "Say hello as the extension does, on a comm over a subshell; (subshell id, comm id)."
    sid, cid = subshell(k), uuid.uuid4().hex
    k.collect(on_subshell(k, sid, 'comm_open', dict(comm_id=cid, target_name='boopiter',
                                                     data=dict(type='hello', version=1, binding=None))), shell_reply=False)
    return sid, cid


def idle(msg_id):
    "until(seen): the request `msg_id` has ended (the kernel went idle after it)."
    return lambda seen: msg_id in seen and any(m[1] == 'status' and m[2]['execution_state'] == 'idle'
                                               for m in seen[msg_id].messages)


def reply_of(seen, msg_id)->dict:
    "The reply bundle request `msg_id` shows now (its display, with every update applied)."
    return next(o['data'] for o in seen[msg_id].outputs if REPLY_MIME in o.get('data', {}))


def ended(msg_id):
    "until(seen): the reply request `msg_id` shows has ended (done, interrupted or a fault)."
    def check(seen):
        try: return reply_of(seen, msg_id)[REPLY_MIME]['status'] not in ('waiting', 'streaming')
        except (KeyError, StopIteration): return False
    return check


@pytest.fixture
def lab(srv, tmp_path):
    "A kernel with boopiter loaded and the extension's hello said."
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        res = k.run('%load_ext boopiter_ext')
        assert res.status == 'ok'
        announced = [m[2]['comm_id'] for m in res.messages if m[1] == 'comm_open']   # the kernel's own announce
        k.subshell, hello = with_frontend(k)
        k.comms = [*announced, hello]   # every comm a frontend would close with the notebook
        yield k


def test_a_prompt_ends_at_once_and_a_cell_runs_while_its_reply_streams_into_it(lab, srv):
    words = [f'w{i} ' for i in range(60)]
    srv.script(''.join(words), delay=0.05)   # about 3 s of streaming
    p = lab.send(f'%%prompt -m {MODEL}\nCount slowly', cell_id='p1', lab=True)
    sent = time.monotonic()
    lab.follow(idle(p))
    assert time.monotonic() - sent < 2 and reply_of(lab.seen, p)[REPLY_MIME]['status'] in ('waiting', 'streaming')
    c = lab.send('print(6 * 7)', cell_id='c1', lab=True)
    asked = time.monotonic()
    lab.follow(idle(c))
    took = time.monotonic() - asked
    assert lab.seen[c].text == '42\n' and took < 1, took              # at once, beside the streaming reply
    assert reply_of(lab.seen, p)[REPLY_MIME]['status'] in ('waiting', 'streaming')  # still going when the cell ended
    lab.follow(ended(p), timeout=30)
    data = reply_of(lab.seen, p)
    assert data[REPLY_MIME]['status'] == 'done' and data['text/plain'] == ''.join(words)   # exact, in its own cell
    assert [o['output_type'] for o in lab.seen[c].outputs] == ['stream']   # nothing of the reply in the other cell
    # the kernel's record holds the whole reply: the next prompt's context has it
    srv.script('ok')
    q = lab.send(f'%%prompt -m {MODEL}\nAnd then?', cell_id='p2', lab=True)
    lab.follow(ended(q))
    sent_text = str(srv.last_chat()['messages'])
    assert 'w59' in sent_text and 'Count slowly' in sent_text


def test_a_later_prompt_queues_behind_the_reply_above_and_sees_all_of_it_while_cells_run(lab, srv):
    srv.script('first half, second half.', delay=0.15)
    srv.script('I saw it.', delay=0.05)
    cells = [('p1', f'%%prompt -m {MODEL}\nTell me'), ('p2', f'%%prompt -m {MODEL}\nWhat did you say?'),
             ('c1', 'print("meanwhile")')]   # the notebook as the page shows it: the code cell is below both prompts
    on_subshell(lab, lab.subshell, 'comm_msg', dict(comm_id=lab.comms[-1], data=dict(type='notebook', cells=[
        dict(id=i, cell_type='code', source=src) for i, src in cells])))
    p = lab.send(f'%%prompt -m {MODEL}\nTell me', cell_id='p1', lab=True)
    lab.follow(idle(p))
    q = lab.send(f'%%prompt -m {MODEL}\nWhat did you say?', cell_id='p2', lab=True)
    lab.follow(idle(q), timeout=5)                                         # it ended at once too
    waiting = reply_of(lab.seen, q)[REPLY_MIME]
    assert waiting['status'] == 'waiting' and waiting['note'].startswith('waiting for the reply above to end')
    deadline = time.monotonic() + 10   # the first prompt's request reaches the server (on a loaded machine, later)
    while not srv.chats() and time.monotonic() < deadline: time.sleep(0.05)
    assert len(srv.chats()) == 1                                           # the second: not sent yet
    c = lab.send('print("meanwhile")', cell_id='c1', lab=True)
    lab.follow(idle(c), timeout=5)
    assert lab.seen[c].text == 'meanwhile\n' and reply_of(lab.seen, p)[REPLY_MIME]['status'] in ('waiting', 'streaming')
    lab.follow(ended(q), timeout=30)
    assert reply_of(lab.seen, p)[REPLY_MIME]['status'] == 'done'
    sent = srv.last_chat()['messages']
    assert 'first half, second half.' in str(sent)                         # the whole reply above, not half
    assert 'meanwhile' not in str(sent)                                    # a cell below it, run meanwhile: not sent
    assert reply_of(lab.seen, q)['text/plain'] == 'I saw it.'              # in the same view, in its own cell
    assert [o['output_type'] for o in lab.seen[q].outputs] == ['display_data']


def test_a_queued_prompt_stopped_or_run_again_is_not_sent(lab, srv):
    sid, cid = lab.subshell, lab.comms[-1]
    srv.script('tick ' * 600, delay=0.05)   # 30 s at most: stopped below
    p = lab.send(f'%%prompt -m {MODEL}\nCount', cell_id='p1', lab=True)
    q = lab.send(f'%%prompt -m {MODEL}\nNever sent', cell_id='p2', lab=True)
    lab.follow(idle(q))
    on_subshell(lab, sid, 'comm_msg', dict(comm_id=cid, data=dict(type='stop', cell_id='p2')))   # its view's Stop
    lab.follow(ended(q), timeout=10)
    data = reply_of(lab.seen, q)[REPLY_MIME]
    assert data['status'] == 'interrupted' and data['summary'] == 'stopped before it was sent'
    assert reply_of(lab.seen, p)[REPLY_MIME]['status'] in ('waiting', 'streaming')   # the reply above goes on
    srv.script('Second try.')
    r = lab.send(f'%%prompt -m {MODEL}\nThen this', cell_id='p3', lab=True)
    r2 = lab.send(f'%%prompt -m {MODEL}\nThen this, reworded', cell_id='p3', lab=True)   # run again while queued
    lab.follow(lambda seen: idle(r2)(seen) and ended(r)(seen))
    assert reply_of(lab.seen, r)[REPLY_MIME]['summary'] == 'stopped before it was sent'
    on_subshell(lab, sid, 'comm_msg', dict(comm_id=cid, data=dict(type='stop', cell_id='p1')))   # the reply above ends
    lab.follow(lambda seen: ended(p)(seen) and ended(r)(seen) and ended(r2)(seen), timeout=30)
    assert reply_of(lab.seen, r)[REPLY_MIME]['status'] == 'interrupted'
    assert reply_of(lab.seen, r2)['text/plain'] == 'Second try.'
    assert [m['messages'][-1]['content'].rpartition('\n')[2] for m in srv.chats()] == ['Count', 'Then this, reworded']


def test_stop_interrupt_running_again_and_closing_end_a_background_reply_keeping_what_arrived(lab, srv):
    sid, cid = lab.subshell, lab.comms[-1]
    for how in ('stop', 'interrupt', 'again', 'close'):
        srv.script('tick ' * 2000, delay=0.02)
        p = lab.send(f'%%prompt -m {MODEL}\nCount forever ({how})', cell_id='p1', lab=True)   # not a reused reply
        lab.follow(lambda seen: p in seen and any(o.get('data', {}).get(REPLY_MIME, {}).get('status') == 'streaming'
                                                  and 'tick' in o['data']['text/plain'] for o in seen[p].outputs))
        if how == 'stop': on_subshell(lab, sid, 'comm_msg', dict(comm_id=cid, data=dict(type='stop', cell_id='p1')))
        elif how == 'interrupt': lab.km.interrupt_kernel()   # no cell runs: ipykernel would ignore it
        elif how == 'close':   # the notebook closed: every comm of its frontend closes
            for c in lab.comms: on_subshell(lab, sid, 'comm_close', dict(comm_id=c, data={}))
        else:
            srv.script('Again.')
            again = lab.send(f'%%prompt -m {MODEL}\nCount forever ({how})', cell_id='p1', lab=True)
        at = time.monotonic()
        lab.follow(ended(p), timeout=10)
        data = reply_of(lab.seen, p)
        assert time.monotonic() - at < 3, how
        assert data[REPLY_MIME]['status'] == 'interrupted' and data['text/plain'].startswith('tick '), how
        assert not lab.seen[p].error, how                                  # stopping is not a fault
        stream, deadline = srv.streams[-1 if how != 'again' else -2], time.monotonic() + 5
        while not stream.disconnected: assert time.monotonic() < deadline, how; time.sleep(0.02)   # the server stops
        if how == 'again':
            lab.follow(ended(again))
            assert reply_of(lab.seen, again)['text/plain'] == 'Again.'
    assert lab.value('"still usable"') == "'still usable'"


def test_a_fault_shows_as_one_line_in_the_prompt_cell_and_the_partial_reply_stays(lab, srv):
    srv.script('first words and then', fault='drop', after=3, delay=0.1)
    p = lab.send(f'%%prompt -m {MODEL}\nGo', cell_id='p1', lab=True)
    lab.follow(idle(p))
    c = lab.send('x = 1', cell_id='c1', lab=True)
    lab.follow(lambda seen: idle(c)(seen) and seen[p].error is not None, timeout=30)
    err = lab.seen[p].error
    assert err['ename'] == 'ReplyBroken' and len(err['traceback']) == 1 and 'partial reply is kept' in err['evalue']
    assert reply_of(lab.seen, p)['text/plain'].startswith('first words')
    assert lab.seen[c].error is None and lab.seen[c].outputs == []   # nothing in the cell that ran meanwhile


def test_headless_clients_and_the_setting_keep_the_cell_running_until_the_reply_ends(lab, srv):
    srv.script('one two three', delay=0.1)
    res = lab.run(f'%%prompt -m {MODEL}\nCount', cell_id='p1')   # as nbclient sends it: no input
    assert res.reply['data'][REPLY_MIME]['status'] == 'done' and res.reply['data']['text/plain'] == 'one two three'
    status = lab.run('%boop status').text
    assert 'streaming the cell ends with its reply: it was not run from JupyterLab or Notebook 7 (a headless run' in status
    s = lab.send('%boop status', cell_id='s1', lab=True)
    lab.follow(idle(s))
    assert 'streaming the cell ends once its request is on its way' in lab.seen[s].text
    lab.run('%config BoopMagics.background = False')
    srv.script('four five six', delay=0.1)
    p = lab.send(f'%%prompt -m {MODEL}\nCount on', cell_id='p2', lab=True)
    lab.follow(idle(p))
    assert reply_of(lab.seen, p)[REPLY_MIME]['status'] == 'done'   # the cell ended with it
    s = lab.send('%boop status', cell_id='s1', lab=True)
    lab.follow(idle(s))
    assert '`background` is off (%config)' in lab.seen[s].text, lab.seen[s].text


def test_without_the_extension_a_lab_cell_ends_with_its_reply(srv, tmp_path):
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        assert k.run('%load_ext boopiter_ext').status == 'ok'
        srv.script('one two three', delay=0.1)
        p = k.send(f'%%prompt -m {MODEL}\nCount', cell_id='p1', lab=True)
        k.follow(idle(p))
        assert reply_of(k.seen, p)[REPLY_MIME]['status'] == 'done'


def test_reuse_record_and_auto_mode_keep_working_beside_the_notebook(lab, srv, tmp_path):
    srv.script('Saved once.', delay=0.05)
    p = lab.send(f'%%prompt -m {MODEL}\nOnce', cell_id='p1', lab=True)
    lab.follow(ended(p))
    again = lab.send(f'%%prompt -m {MODEL}\nOnce', cell_id='p1', lab=True)     # the same request: shown again
    lab.follow(idle(again))
    data = reply_of(lab.seen, again)
    assert data['text/plain'] == 'Saved once.' and data[REPLY_MIME]['reused'] and len(srv.chats()) == 1
    cassette = tmp_path/'nb.cassette.json'
    lab.run(f'%config BoopMagics.cassette_file = {str(cassette)!r}')
    lab.run('%boop record')
    srv.script('Recorded.', delay=0.05)
    r = lab.send(f'%%prompt -m {MODEL}\nRecord this', cell_id='p3', lab=True)
    lab.follow(idle(r))
    lab.follow(ended(r))
    deadline = time.monotonic() + 10   # written on the reply's thread, right after its last update
    while not (cassette.exists() and 'Recorded.' in cassette.read_text()): assert time.monotonic() < deadline; time.sleep(0.05)
    lab.run('%boop cassette off')
    lab.run('def add_numbers(a:int, b:int)->int:\n    "Add two numbers"\n    return a + b\n'
            'from boopiter_ext import add_tool\nadd_tool(add_numbers)')
    srv.script('```python\nadd_numbers(2, 3)\n```')
    srv.script('It is 5.')
    a = lab.send(f'%%prompt --auto -m {MODEL}\nAdd 2 and 3 with the tool.', cell_id='p2', lab=True)
    lab.follow(idle(a))   # a tool loop runs the kernel's code: its cell ends with its last reply
    last = [d for o in lab.seen[a].outputs if (d := o.get('data', {}).get(REPLY_MIME)) and d['kind'] == 'reply'][-1]
    assert last['status'] == 'done' and 'It is 5.' in str(last['blocks'])


def test_a_dead_drop_reply_streams_beside_the_notebook(lab, tmp_path):
    import threading
    root = tmp_path/'dead_drop'
    (root/'prompts').mkdir(parents=True)
    lab.run(f'%config BoopMagics.deaddrop_dir = {str(root)!r}')
    go = threading.Event()
    def answer():
        deadline = time.monotonic() + 30
        while not (found := [f for f in (root/'prompts').glob('*') if not f.name.startswith('.')]):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        (root/'responses').mkdir(exist_ok=True)
        with open(root/'responses'/found[0].name, 'a') as f:
            f.write('From the drop, '); f.flush()
            go.wait(30)
            for part in ('written later.\n', '---MODEL: bot---\n', '---DONE---\n'): f.write(part); f.flush()
    threading.Thread(target=answer, daemon=True).start()
    p = lab.send('%%prompt -m deaddrop/claude\nAre you there?', cell_id='p1', lab=True)
    lab.follow(idle(p))
    c = lab.send('print("meanwhile")', cell_id='c1', lab=True)
    lab.follow(idle(c), timeout=5)                          # the drop's writer has not finished: the cell ran anyway
    assert lab.seen[c].text == 'meanwhile\n'
    go.set()
    lab.follow(ended(p), timeout=30)
    assert reply_of(lab.seen, p)['text/plain'] == 'From the drop, written later.'


def test_a_prompt_that_must_end_with_its_reply_waits_in_its_cell_and_unloading_stops_a_streaming_reply(lab, srv):
    srv.script('tick ' * 40, delay=0.05)
    srv.script('After the ticks.')
    p = lab.send(f'%%prompt -m {MODEL}\nCount', cell_id='p1', lab=True)
    a = lab.send(f'%%prompt --auto -m {MODEL}\nAnd now?', cell_id='p2', lab=True)   # auto mode: it ends with its reply
    lab.follow(idle(a), timeout=30)
    said = [m for m in lab.seen[a].messages if m[1] in ('stream', 'clear_output')]
    assert said[0][2]['text'].startswith('Waiting for the reply streaming above') and said[1][1] == 'clear_output'
    assert reply_of(lab.seen, p)[REPLY_MIME]['status'] == 'done'          # ended before this one was sent
    assert reply_of(lab.seen, a)[REPLY_MIME]['status'] == 'done' and ('tick ' * 40).strip() in str(srv.last_chat())
    srv.script('tock ' * 400, delay=0.05)
    q = lab.send(f'%%prompt -m {MODEL}\nCount again', cell_id='p3', lab=True)
    lab.follow(lambda seen: q in seen and 'tock' in str(seen[q].outputs))
    u = lab.send('%unload_ext boopiter_ext', cell_id='u1', lab=True)
    lab.follow(lambda seen: idle(u)(seen) and ended(q)(seen), timeout=10)
    assert reply_of(lab.seen, q)[REPLY_MIME]['status'] == 'interrupted' and lab.seen[u].error is None
    assert lab.run('%load_ext boopiter_ext').status == 'ok' and lab.value('"usable"') == "'usable'"
