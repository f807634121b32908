"""Reproducible notebooks: the request digest, saved replies reused, cassettes recorded and replayed offline."""

import json
import nbformat, pytest
from conftest import saved_replies as replies, write_code_notebook as notebook
from ollama_server import OllamaTestServer
from boopiter_ext.context.build import Cell
from boopiter_ext.errors import CassetteDrift
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.render.reply import reply_bundle
from boopiter_ext.core.replay import (CASSETTE_FORMAT, Cassette, DiskCache, cassette_path, clean_model_info,
                                      clean_snapshot, find_kept_reply, find_saved_reply, request_digest,
                                      saved_auto_model, saved_model_info, saved_snapshot)
from boopiter_ext.faces.run import run_notebook
from boopiter_ext.models.stream import Reply

MODEL = 'qwen3:1.7b'


def msgs(*texts): return [mk_msg('system prompt', 'system')] + [mk_msg(t) for t in texts]


def test_the_digest_ignores_run_counters_and_sees_everything_else():
    d = request_digest(MODEL, msgs('In [3]:\n```python\nx\n```\n<object at 0x7f3a9c2b1d90>'), dict(num_ctx=4096))
    assert d.startswith('sha256:') and len(d) == 71
    assert d == request_digest(MODEL, msgs('In [12]:\n```python\nx\n```\n<object at 0x7f00dead1234>'), dict(num_ctx=4096))
    others = [request_digest('qwen3:8b', msgs('In [3]:\n```python\nx\n```'), dict(num_ctx=4096)),
              request_digest(MODEL, msgs('In [3]:\n```python\ny\n```'), dict(num_ctx=4096)),
              request_digest(MODEL, msgs('In [3]:\n```python\nx\n```'), dict(num_ctx=8192)),
              request_digest(MODEL, msgs('In [3]:\n```python\nx\n```'), dict(num_ctx=4096, think='h')),
              request_digest(MODEL, [mk_msg(['look', b'\x89PNG\r\n\x1a\nA'])], {}),
              request_digest(MODEL, [mk_msg(['look', b'\x89PNG\r\n\x1a\nB'])], {})]
    assert len({d, *others}) == 7
    tb = 'Cell In[7], line 2\n  File /tmp/ipykernel_4242/31337.py:2\nZeroDivisionError'
    assert request_digest(MODEL, msgs(tb), {}) == request_digest(MODEL, msgs(tb.replace('[7]', '[9]').replace('4242', '77')), {})
    for a, b in [('What is 0xFF00FF in decimal?', 'What is 0x00FF00 in decimal?'),   # numbers the user wrote count
                 ('mask = 0xFFFF0000', 'mask = 0x0000FFFF'), ('Output:\nIn [3] of the log', 'Output:\nIn [4] of the log')]:
        assert request_digest(MODEL, msgs(a), {}) != request_digest(MODEL, msgs(b), {})


def reply_cell(answer, digest, status='done', model=MODEL, **md):
    out = dict(output_type='display_data', data={'text/plain': [answer[:3], answer[3:]], 'text/markdown': answer},
               metadata={'boopiter': dict(reply=True, digest=digest, status=status, model=model, **md)})
    return Cell('%%prompt\nq', 'prompt', [out])


def test_saved_replies_are_found_by_digest_newest_first_finished_only():
    kernel = [reply_cell('older', 'sha256:a'), reply_cell('cut short', 'sha256:b', status='interrupted')]
    saved = [reply_cell('saved', 'sha256:a'), reply_cell('other', 'sha256:c', model_info=dict(vision=True))]
    assert find_saved_reply('sha256:a', kernel, saved)['data']['text/plain'] == 'older'      # this kernel's first
    assert find_saved_reply('sha256:a', [], saved)['data']['text/plain'] == 'saved'          # list texts joined
    assert find_saved_reply('sha256:b', kernel, saved) is None                              # interrupted: asked again
    assert saved_model_info(MODEL, kernel, saved) == dict(vision=True, context_length=None) and saved_model_info('x', saved) is None
    mine = reply_cell('my own', 'sha256:a')
    mine.cell_id = 'c7'
    assert find_saved_reply('sha256:a', kernel, [mine] + saved, cell_id='c7')['data']['text/plain'] == 'my own'


def test_a_reply_from_another_model_is_kept_only_when_nothing_but_the_model_changed():
    sent, now = msgs('x = 42', 'What is x?'), dict(max_tokens=0, num_ctx=8192)
    theirs = request_digest('gemma3:4b', sent, dict(think='h', num_ctx=16384))   # its own effort and window
    cell = reply_cell('42.', theirs, model='gemma3:4b', effort='h', context=dict(window=16384))
    output, digest = find_kept_reply(MODEL, sent, now, [cell])
    assert output['data']['text/plain'] == '42.' and digest == theirs
    assert find_kept_reply(MODEL, msgs('x = 43', 'What is x?'), now, [cell]) is None     # the context changed
    assert find_kept_reply(MODEL, sent, dict(now, max_tokens=50), [cell]) is None        # so did the options sent
    assert find_kept_reply('gemma3:4b', sent, now, [cell]) is None                       # the same model: not kept
    bad = [reply_cell('?', theirs, model='gemma3:4b', effort='max', context=dict(window=16384)),
           reply_cell('?', theirs, model='a b', effort='h', context=dict(window=16384)),
           reply_cell('?', theirs, model='gemma3:4b', effort='h', context=dict(window=16384), status='interrupted')]
    assert find_kept_reply(MODEL, sent, now, bad) is None                                 # never a reply file lies about
    many = [reply_cell('?', 'sha256:x', model=f'm{i}:1b', context=dict(window=4096)) for i in range(40)]
    assert find_kept_reply(MODEL, sent, now, many + [cell]) is None                       # bounded: 16 digests at most


def test_a_kept_reply_is_marked_at_the_top_and_in_its_details():
    r = Reply('gemma3:4b')
    r.add_content('Fine.')
    r.finish('done')
    data, md = reply_bundle(r, dict(kept=MODEL, picked_by='auto'), None)
    line = ("Kept: answered by gemma3:4b; this notebook now answers with qwen3:1.7b; ask again with `%%prompt --fresh` "
            "(or the menu's reuse switch)")
    assert data['text/markdown'].startswith('*↺ Kept: answered by gemma3:4b; this notebook now answers with qwen3:1.7b')
    assert '<summary>Reply details · kept · gemma3:4b' in data['text/markdown'] and data['text/plain'] == 'Fine.'
    reply = data['application/vnd.boopiter.reply+json']
    assert reply['details'][0] == line and reply['note'] == line and reply['kept'] == MODEL and not reply['reused']
    assert md['boopiter']['kept'] == MODEL and 'reused' not in md['boopiter'] and md['boopiter']['model'] == 'gemma3:4b'


def test_a_restored_reply_renders_exactly_as_recorded():
    r = Reply(MODEL)
    r.add_thinking('weighing ')
    r.add_content('The answer.')
    r.finish('done', dict(finish_reason='stop', prompt_tokens=12))
    again = Reply.restore(MODEL, json.loads(json.dumps(r.snapshot())))   # through a JSON file and back
    assert reply_bundle(again, dict(name='Ollama')) == reply_bundle(r, dict(name='Ollama'))


def test_a_restored_reply_keeps_its_note_and_its_unclosed_think():
    "A model that opened <think> and never closed it: its reply is marked, and so is its replay."
    r = Reply(MODEL)
    r.add_content('<think>Paris is the capital')
    r.finish('done')
    note = 'the model opened <think> and never closed it; what it wrote there is shown as the answer'
    assert (r.answer, r.note, r.unclosed) == ('Paris is the capital', note, True)   # what is recorded
    again = Reply.restore(MODEL, json.loads(json.dumps(r.snapshot())))
    assert (again.answer, again.note, again.unclosed) == ('Paris is the capital', note, True)
    data, md = reply_bundle(again, dict(name='Ollama'))
    assert data['text/markdown'].startswith('Paris is the capital\n\n*(the model opened &lt;think&gt; and never closed it')
    assert md['boopiter']['note'] == note
    assert reply_bundle(again, dict(name='Ollama')) == reply_bundle(r, dict(name='Ollama'))
    cut = Reply.restore(MODEL, dict(answer='', status='done', note='cut off while reasoning', info={}))
    assert (cut.note, cut.unclosed) == ('cut off while reasoning', False)


def test_reused_is_marked_once_in_the_details():
    r = Reply(MODEL)
    r.add_content('Fine.')
    r.finish('done')
    once = reply_bundle(r, {'reused': True}, None)
    assert once[0]['text/markdown'].count('reused · ') == 1 and once[0]['text/plain'] == 'Fine.' and once[1]['boopiter']['reused']
    assert '<summary>Reply details · reused · ' in once[0]['text/markdown'] and '--fresh' in once[0]['text/markdown']
    assert 'reused' not in reply_bundle(r, {}, None)[0]['text/markdown']


def test_cassettes_round_trip_and_refuse_what_they_do_not_have(tmp_path):
    path = cassette_path(tmp_path/'analysis.ipynb')
    assert path == tmp_path/'analysis.cassette.json' and cassette_path(None, '~/x.json').name == 'x.json'
    c = Cassette(path)
    c.add('sha256:1', MODEL, dict(num_ctx=4096), dict(answer='one'), dict(capabilities=['completion'], vision=False))
    c.add('sha256:2', MODEL, {}, dict(answer='two'))
    c.add('sha256:1', MODEL, {}, dict(answer='one again'))   # re-recorded: replaced, not doubled
    d = json.loads(path.read_text())
    assert list(d) == ['format', 'version', 'models', 'auto_model', 'turns'] and d['format'] == CASSETTE_FORMAT
    assert [t['digest'] for t in d['turns']] == ['sha256:2', 'sha256:1']
    back = Cassette(path)
    assert back.reply('sha256:1', MODEL) == dict(answer='one again', info={}) and back.models[MODEL]['vision'] is False
    with pytest.raises(CassetteDrift, match=r'has no reply from qwen3:1.7b to this exact conversation \(2 turns of it '
                                            r'recorded\).*Re-record: `%boop record`'):
        back.reply('sha256:3', MODEL)
    path.write_text('{"format": "something else"}')
    with pytest.raises(CassetteDrift, match='not a boopiter cassette'): Cassette(path)


def test_disk_cache_keeps_outputs_by_digest(tmp_path):
    cache = DiskCache(tmp_path/'cache')
    assert cache.get('sha256:ab') is None
    cache.put('sha256:ab', dict(output_type='display_data', data={'text/plain': 'hi'}, metadata={}))
    assert cache.get('sha256:ab')['data'] == {'text/plain': 'hi'} and (tmp_path/'cache'/'ab.json').exists()


# -- in real kernels, headless

CELLS = ['%load_ext boopiter_ext', 'x = 6 * 7', f'%%prompt -m {MODEL}\nWhat is x?', 'y = x + 1',
         f'%%prompt -m {MODEL}\nAnd y?', f'%%prompt -m {MODEL}\nAnd both?']


@pytest.mark.slow
def test_run_all_twice_asks_nothing_the_second_time_and_a_change_marks_only_what_is_below_stale(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    for text in ('x is 42.', 'y is 43.', 'Both: 42 and 43.'): srv.script(text)
    first = notebook(tmp_path/'nb.ipynb', CELLS)
    assert run_notebook(first, tmp_path/'run1.ipynb', write=lambda s: None)
    assert len(srv.chats()) == 3
    srv.reset()
    assert run_notebook(tmp_path/'run1.ipynb', tmp_path/'run2.ipynb', write=lambda s: None)
    assert srv.chats() == []                                                # Run All again: no model asked
    again = replies(tmp_path/'run2.ipynb')
    assert [o['data']['text/plain'] for o in again] == ['x is 42.', 'y is 43.', 'Both: 42 and 43.']
    assert all(o['metadata']['boopiter']['reused'] and 'Reply details · reused · ' in o['data']['text/markdown']
               for o in again)
    assert run_notebook(tmp_path/'run2.ipynb', tmp_path/'run3.ipynb', write=lambda s: None)
    assert replies(tmp_path/'run3.ipynb') == again                          # stable: no diff from run to run
    nb = nbformat.read(tmp_path/'run2.ipynb', as_version=4)
    nb.cells[3].source = 'y = x + 2'                                        # a cell between the first and second prompt
    nbformat.write(nb, tmp_path/'changed.ipynb')
    assert run_notebook(tmp_path/'changed.ipynb', tmp_path/'run4.ipynb', write=lambda s: None)
    assert srv.chats() == []                                                # kept, not asked again (issue 22.2)
    kept = replies(tmp_path/'run4.ipynb')
    assert [o['data']['text/plain'] for o in kept] == ['x is 42.', 'y is 43.', 'Both: 42 and 43.']
    assert [o['metadata']['boopiter'].get('reused', False) for o in kept] == [True, False, False]
    assert [('`y = x + 2`' in o['metadata']['boopiter'].get('stale', '')) for o in kept] == [False, True, True]


@pytest.mark.slow
def test_saved_replies_come_back_with_no_server_at_all(tmp_path, monkeypatch):
    with OllamaTestServer() as server:
        monkeypatch.setenv('OLLAMA_HOST', server.host)
        server.script('x is 42.')
        assert run_notebook(notebook(tmp_path/'nb.ipynb', CELLS[:3]), tmp_path/'run1.ipynb', write=lambda s: None)
    assert run_notebook(tmp_path/'run1.ipynb', tmp_path/'run2.ipynb', write=lambda s: None)   # the server is gone
    [reply] = replies(tmp_path/'run2.ipynb')
    assert reply['data']['text/plain'] == 'x is 42.' and reply['metadata']['boopiter']['reused']


@pytest.mark.slow
def test_in_a_live_kernel_a_rerun_reuses_and_fresh_or_the_toolbar_switch_asks_again(kernel, srv):
    kernel.run('x = 6 * 7')
    srv.script('x is 42.')
    kernel.run(f'%%prompt -m {MODEL}\nWhat is x?', cell_id='p1')
    res = kernel.run(f'%%prompt -m {MODEL}\nWhat is x?', cell_id='p1')   # a new execution count: the same request
    assert len(srv.chats()) == 1 and res.reply['metadata']['boopiter']['reused']
    srv.script('Still 42.')
    res = kernel.run(f'%%prompt -m {MODEL} --fresh\nWhat is x?', cell_id='p1')
    assert len(srv.chats()) == 2 and res.reply['data']['text/plain'] == 'Still 42.'
    kernel.run('%boop')
    switch = kernel.widget(_model_name='ToggleButtonModel', description='reuse replies')[0]
    assert kernel.widgets[switch]['value'] is True
    kernel.set_widget(switch, value=False)
    kernel.run(f'%%prompt -m {MODEL}\nWhat is x?', cell_id='p1')
    assert len(srv.chats()) == 3 and 'every prompt asks the model' in kernel.run('%boop status').text


TOOL_CELLS = ['%load_ext boopiter_ext', 'prices = [3, 4]',
              f'%%prompt -m {MODEL} --think h\nWhat is in prices?',
              f'%%prompt -m {MODEL} --auto\nWhich variables do I have? Use the tool.']


def script_tool_run(server):
    server.script('It holds 3 and 4.', thinking='Look at the cell above.')
    server.script('```python\nlist_variables()\n```')
    server.script('You have `prices`.')


def loop_outputs(path):
    "Every reply and tool-loop output (the Run buttons' widgets differ from run to run by their model ids)."
    return [o for c in nbformat.read(path, as_version=4).cells for o in c.get('outputs', [])
            if o.get('metadata', {}).get('boopiter') and 'binding' not in o['metadata']['boopiter']]


@pytest.mark.slow
def test_record_then_replay_offline_gives_identical_outputs_and_a_changed_prompt_is_refused(tmp_path, monkeypatch):
    nb = notebook(tmp_path/'tools.ipynb', TOOL_CELLS)
    with OllamaTestServer() as server:
        monkeypatch.setenv('OLLAMA_HOST', server.host)
        script_tool_run(server)
        assert run_notebook(nb, tmp_path/'recorded.ipynb', write=lambda s: None, cassette='record')   # boopiter-run --record
        assert len(server.chats()) == 3
    cassette = json.loads((tmp_path/'tools.cassette.json').read_text())
    assert len(cassette['turns']) == 3 and cassette['models'][MODEL]['context_length'] == 40960
    assert cassette['turns'][0]['reply']['reasoning'] == 'Look at the cell above.'
    monkeypatch.setenv('BOOPITER_CASSETTE', 'replay')   # the server is stopped: only the cassette answers
    assert run_notebook(nb, tmp_path/'replayed.ipynb', write=lambda s: None)
    recorded, replayed = loop_outputs(tmp_path/'recorded.ipynb'), loop_outputs(tmp_path/'replayed.ipynb')
    assert len(recorded) == 5 and replayed == recorded   # 3 replies, the round's call and the loop's trace, exactly
    trace = next(o['metadata']['boopiter']['tool_loop'] for o in replayed if 'tool_loop' in o['metadata']['boopiter'])
    assert trace['stop'] == 'answered' and [s['status'] for s in trace['steps']] == ['ok']   # the tool really ran again
    changed = notebook(tmp_path/'tools.ipynb', TOOL_CELLS[:2] + [TOOL_CELLS[2].replace('in prices', 'in prices, exactly')])
    assert not run_notebook(changed, tmp_path/'refused.ipynb', write=lambda s: None)
    [err] = [o for c in nbformat.read(tmp_path/'refused.ipynb', as_version=4).cells for o in c.outputs
             if o['output_type'] == 'error']
    assert err['ename'] == 'CassetteDrift' and 'Re-record: `%boop record`' in err['evalue'] and len(err['traceback']) == 1


@pytest.mark.slow
def test_a_cache_folder_keeps_replies_for_another_kernel(srv, tmp_path):
    from kernels import KernelSession
    setup = ['%load_ext boopiter_ext', f"%config BoopMagics.cache_dir = '{tmp_path/'replies'}'", 'x = 6 * 7']
    srv.script('x is 42.')
    for n in range(2):   # two kernels, no notebook file: only the folder can remember
        with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
            for src in setup: assert k.run(src).status == 'ok'
            res = k.run(f'%%prompt -m {MODEL}\nWhat is x?')
            assert res.reply['data']['text/plain'] == 'x is 42.' and res.reply['metadata']['boopiter'].get('reused', False) == bool(n)
    assert len(srv.chats()) == 1 and len(list((tmp_path/'replies').glob('*.json'))) == 1


def test_what_a_file_says_is_cleaned_before_it_is_shown_again():
    hostile = dict(answer=['not', 'text'], reasoning='<script>x()</script>', status=7, info=dict(finish_reason=3,
                   prompt_tokens=5, evil='x'), ttft='soon', chunks=True)
    assert clean_snapshot(hostile) == dict(reasoning='<script>x()</script>', info=dict(prompt_tokens=5))
    out = dict(output_type='display_data', metadata={'boopiter': dict(reply=True, reasoning='hm', completion_tokens=9,
                                                                       tokens_per_s=12.5, finish_reason='stop')},
               data={'text/plain': 'Fine <img src=x onerror=alert(1)>', 'text/markdown': '<script>alert(1)</script>'})
    snap = saved_snapshot(out)
    assert snap['answer'] == 'Fine <img src=x onerror=alert(1)>' and snap['tokens_per_s'] == 12.5
    data, md = reply_bundle(Reply.restore(MODEL, snap), {'reused': True}, None)
    assert '<script>' not in data['text/markdown'] and '<img src' not in data['text/markdown']   # drawn again, defused
    assert 'Fine' in data['text/markdown'] and md['boopiter']['reused']


def test_two_writers_keep_each_others_turns_and_an_unreadable_cassette_is_set_aside_when_recording(tmp_path):
    path = tmp_path/'nb.cassette.json'
    a, b = Cassette(path), Cassette(path)   # two kernels, each with its own view of the file
    for i in range(3):
        a.add(f'sha256:a{i}', MODEL, {}, dict(answer=f'a{i}'))
        b.add(f'sha256:b{i}', MODEL, {}, dict(answer=f'b{i}'))
    assert len(Cassette(path)) == 6
    stamp = json.loads(path.read_text())['turns'][0]['recorded_at']
    a.add('sha256:a0', MODEL, {}, dict(answer='a0'))     # recorded again, the same reply: kept as it was (no git noise)
    assert [t['recorded_at'] for t in json.loads(path.read_text())['turns'] if t['digest'] == 'sha256:a0'] == [stamp]
    path.write_text('<<<<<<< HEAD\n')                     # a merge conflict
    with pytest.raises(CassetteDrift, match='cannot be read.*delete or fix it'): Cassette(path)
    assert len(Cassette(path, recording=True)) == 0 and (tmp_path/'nb.cassette.json.bak').read_text() == '<<<<<<< HEAD\n'


def test_a_runs_cassette_choice_beats_settings_files_and_off_beats_the_environment(tmp_path, monkeypatch):
    from boopiter_ext.settings import load_settings
    (tmp_path/'settings.ini').write_text('[boopiter]\ncassette = replay\ncache_dir = /tmp/elsewhere\n'
                                         'cassette_file = /tmp/x.json\n')
    monkeypatch.setenv('BOOPITER_CASSETTE', 'record')
    s = load_settings(start=tmp_path)
    assert s['cassette'] == 'record' and s['cache_dir'] == '' and s['cassette_file'] == ''   # not a repository's choice
    assert any('`cache_dir` ignored' in w for w in s.warnings) and any('`cassette_file` ignored' in w for w in s.warnings)
    assert load_settings(runtime=dict(cassette='off'), start=tmp_path)['cassette'] == 'off'


@pytest.mark.slow
def test_prompts_below_a_traceback_and_with_no_model_picked_are_reused_with_no_server(tmp_path, monkeypatch):
    cells = ['%load_ext boopiter_ext', 'import traceback\ntry:\n    1/0\nexcept ZeroDivisionError:\n    traceback.print_exc()',
             '%%prompt\nWhy does it fail?']
    with OllamaTestServer() as server:
        monkeypatch.setenv('OLLAMA_HOST', server.host)
        server.script('Division by zero.')
        assert run_notebook(notebook(tmp_path/'nb.ipynb', cells), tmp_path/'run1.ipynb', write=lambda s: None)
        [first] = replies(tmp_path/'run1.ipynb')
        assert first['metadata']['boopiter']['model_source'] == 'auto' and 'ipykernel_' in server.last_chat()['messages'][-1]['content']
    assert run_notebook(tmp_path/'run1.ipynb', tmp_path/'run2.ipynb', write=lambda s: None)   # new kernel pid, no server
    [again] = replies(tmp_path/'run2.ipynb')
    assert again['metadata']['boopiter']['reused'] and again['data']['text/plain'] == 'Division by zero.'
    assert again['metadata']['boopiter']['model'] == first['metadata']['boopiter']['model']   # not the embedded model


@pytest.mark.slow
def test_a_lenient_loop_of_native_tool_calls_is_reused_round_by_round(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    cells = ['%load_ext boopiter_ext', 'prices = [3, 4]',
             f'%%prompt -m {MODEL} --auto --lenient\nWhich variables do I have? Use the tool.']
    srv.script('', tool_calls=[dict(function=dict(name='list_variables', arguments={}))])
    srv.script('You have `prices`.')
    assert run_notebook(notebook(tmp_path/'nb.ipynb', cells), tmp_path/'run1.ipynb', write=lambda s: None)
    assert len(srv.chats()) == 2
    srv.reset()
    assert run_notebook(tmp_path/'run1.ipynb', tmp_path/'run2.ipynb', write=lambda s: None)
    assert srv.chats() == []
    trace = next(o['metadata']['boopiter']['tool_loop'] for c in nbformat.read(tmp_path/'run2.ipynb', as_version=4).cells
                 for o in c.outputs if 'tool_loop' in o.get('metadata', {}).get('boopiter', {}))
    assert trace['stop'] == 'answered' and [s['status'] for s in trace['steps']] == ['ok']   # the tool ran again


# -- files read back are checked at the boundary (issue 12, section 4)

DIGEST = 'sha256:' + 'ab' * 32


def cassette_text(models='{}', turns='[]', auto='null'):
    return (f'{{"format": "{CASSETTE_FORMAT}", "version": 1, "models": {models}, "auto_model": {auto}, '
            f'"turns": {turns}}}')


def test_a_cassette_that_cannot_be_used_is_refused_in_one_line(tmp_path):
    path = tmp_path/'nb.cassette.json'
    for text in ('[' * 100_000 + ']' * 100_000, cassette_text(turns='[' * 70 + ']' * 70), '{"format": NaN}', '"x"',
                 cassette_text().replace('1,', '1.0e999,')):
        path.write_text(text)
        with pytest.raises(CassetteDrift) as e: Cassette(path)
        assert '\n' not in str(e.value) and ('cannot be read' in str(e.value) or 'not a boopiter cassette' in str(e.value))
    path.write_text('[' * 100_000 + ']' * 100_000)
    assert 'cannot be read (nested too deeply)' in str(pytest.raises(CassetteDrift, Cassette, path).value)
    assert len(Cassette(path, recording=True)) == 0 and (tmp_path/'nb.cassette.json.bak').exists()   # set aside


def test_a_cassettes_odd_parts_are_dropped_with_a_warning_naming_the_file_and_key(tmp_path):
    path = tmp_path/'nb.cassette.json'
    models = ('{"qwen3:1.7b": {"capabilities": ["completion", 7, "vision"], "context_length": "40960", "vision": 1}, '
              '"m2": {"context_length": NaN, "capabilities": "tools"}, "a b": {}, "m3": [1], '
              '"ok": {"context_length": 8192, "vision": false, "capabilities": ["completion"]}}')
    turns = (f'[{{"digest": "{DIGEST}", "model": "qwen3:1.7b", "options": 5, '
             '"reply": {"answer": "hi", "ttft": Infinity, "chunks": -1, "status": "exploded", "tokens_per_s": 1e999, '
             '"info": {"prompt_tokens": 99999999999999999999, "tool_calls": [{"function": {"name": "f"}}], "finish_reason": 3}}}, '
             '{"digest": 5, "model": "x", "reply": {}}, {"digest": "sha256:cd", "model": "x y", "reply": {}}, "junk"]')
    path.write_text(cassette_text(models, turns, auto='"a\\u0000b"'))
    c = Cassette(path)
    assert c.models == {'qwen3:1.7b': dict(capabilities=['completion', 'vision'], context_length=None),
                        'm2': dict(context_length=None), 'ok': dict(context_length=8192, vision=False, capabilities=['completion'])}
    assert c.auto_model is None and list(c.turns) == [DIGEST] and c.turns[DIGEST]['options'] == {}
    assert c.reply(DIGEST, 'qwen3:1.7b') == dict(answer='hi', info=dict(tool_calls=[{'function': {'name': 'f'}}]))
    w = '\n'.join(c.warnings)
    for key in ('models.qwen3:1.7b.capabilities', 'models.qwen3:1.7b.context_length', 'models.qwen3:1.7b.vision',
                'models.m2.capabilities', 'models.a b', 'models.m3', 'auto_model'):
        assert f'nb.cassette.json: `{key} = ' in w, key
    assert 'models.m2.context_length' not in w   # NaN reads as null: not set, not refused
    assert 'nb.cassette.json: 3 of its 4 turns ignored' in w and all('\n' not in x for x in c.warnings)
    info = clean_model_info(dict(context_length=1 << 30, capabilities=['x' * 65, 'tools'], vision=True, extra=1))
    assert info == dict(capabilities=['tools'], vision=True, context_length=None)


def test_saved_reply_metadata_of_the_wrong_type_is_cleaned(tmp_path):
    saved = [reply_cell('fine', 'sha256:a', model_info=dict(context_length=-5, capabilities='vision', vision='yes'))]
    assert saved_model_info(MODEL, saved) == dict(context_length=None)
    assert saved_auto_model([reply_cell('x', 'sha256:b', model='a\nb', model_source='auto')]) is None
    assert saved_auto_model([reply_cell('x', 'sha256:b', model_source='auto')]) == MODEL
    out = dict(output_type='display_data', data={'text/plain': 'a'}, metadata={'boopiter': dict(
        reply=True, ttft_s=float('nan'), completion_tokens=True, reasoning=['x'], tokens_per_s=float('inf'), note=5,
        tool_calls=[[[]]], finish_reason='stop' * 100)})
    assert saved_snapshot(out) == dict(answer='a', info={}, reasoning_chunks=0)
    assert saved_snapshot(dict(data='x', metadata=[])) == dict(answer='', reasoning='', note='', info={}, chunks=0, reasoning_chunks=0)
    live = [Cell('%%prompt\nq', 'prompt', [dict(metadata={'boopiter': 'reply'}), dict(metadata=None), 'x', dict(
        metadata={'boopiter': dict(reply=True, digest='sha256:z', status='done')}, data=['no'])])]
    assert find_saved_reply('sha256:z', live) is None and saved_model_info(MODEL, live) is None


def test_the_disk_cache_gives_a_clean_output_or_none(tmp_path):
    cache = DiskCache(tmp_path)
    for text in ('[' * 100_000 + ']' * 100_000, '{"output_type": "display_data", "data": ' + '[' * 3000 + ']' * 3000 + '}',
                 '[]', 'NaN', '{"output_type": "display_data", "data": {"text/plain": 5}}', '\udcff'):
        (tmp_path/'ab.json').write_text(text, errors='surrogateescape')
        assert cache.get('sha256:ab') is None, text[:20]
    (tmp_path/'ab.json').write_text('{"output_type": "display_data", "data": {"text/plain": ["a", "b"], "image/png": 5, '
                                    '"application/json": {"x": NaN}}, "metadata": {"boopiter": {"reply": true}}, "junk": 1}')
    assert cache.get('sha256:ab') == dict(output_type='display_data', metadata={'boopiter': {'reply': True}},
                                          data={'text/plain': 'ab', 'application/json': {'x': None}})


def test_a_cassette_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path/'nb.cassette.json'
    c = Cassette(path)
    c.add(DIGEST, MODEL, {}, dict(answer='kept'))
    before = path.read_text()
    with pytest.raises(TypeError): c.add('sha256:ef', MODEL, {}, dict(answer=object()))   # not JSON: fails mid-write
    assert path.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == ['nb.cassette.json', 'nb.cassette.json.lock']


@pytest.mark.parametrize('fault', ['value', 'interrupt', 'disk'])
def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch, fault):
    "A value JSON cannot hold, an interrupt mid-write, a full disk: the old file stays whole and no `.tmp-*` is left."
    from boopiter_ext.core import replay
    path = tmp_path/'cache'/'ab.json'
    replay._write_json(tmp_path/'new'/'deeper'/'x.json', {})   # folders made as needed, however deep
    replay._write_json(path, dict(old=True))
    bad = dict(x={1, 2})   # a set: json.dump fails halfway through the file
    if fault == 'interrupt':
        def interrupted(*a, **kw): raise KeyboardInterrupt
        monkeypatch.setattr(replay.json, 'dump', interrupted)
    if fault == 'disk':
        def full(src, dst): raise OSError(28, 'No space left on device')
        monkeypatch.setattr(replay.os, 'replace', full)
    err = dict(value=TypeError, interrupt=KeyboardInterrupt, disk=OSError)[fault]
    with pytest.raises(err): replay._write_json(path, bad if fault == 'value' else dict(new=True))
    assert json.loads(path.read_text()) == dict(old=True) and sorted(p.name for p in path.parent.iterdir()) == ['ab.json']
    monkeypatch.undo()
    DiskCache(tmp_path/'cache').put('sha256:cd', dict(output_type='display_data', data={}, metadata={}))
    assert sorted(p.name for p in path.parent.iterdir()) == ['ab.json', 'cd.json']


def test_status_while_replaying_names_the_cassette_and_the_recorded_model_and_asks_no_model(shell, srv, tmp_path,
                                                                                             monkeypatch, capsys):
    from conftest import run
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    monkeypatch.setenv('BOOPITER_NOTEBOOK', str(notebook(tmp_path/'nb.ipynb', ['%load_ext boopiter_ext'])))
    tape = Cassette(tmp_path/'nb.cassette.json')
    tape.auto_model = 'ollama_chat/gemma3:4b'
    tape.save()
    run(shell, '%load_ext boopiter_ext')
    run(shell, '%boop replay')
    capsys.readouterr()
    srv.reset()
    run(shell, '%boop status')
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert rows['model'] == 'auto → ollama_chat/gemma3:4b (the model that answered when recording)'
    assert rows['endpoint'] == 'none: the cassette answers, and no model is asked'
    assert rows['cassette'] == 'replaying nb.cassette.json' and 'warning' not in rows
    assert srv.requests == []   # not even what the model can do: replaying works offline
    run(shell, '%boop record')
    capsys.readouterr()
    run(shell, '%boop status')
    assert 'cassette  recording every model turn to nb.cassette.json' in capsys.readouterr().out


def test_a_dry_run_says_when_running_the_cell_would_show_a_saved_reply_instead_of_asking(shell, srv, capsys,
                                                                                          monkeypatch):
    from conftest import run
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    from boopiter_ext.render.reply import _REUSE_NOTES
    def dry(opts=''):
        capsys.readouterr()
        run(shell, f'%%prompt --no-context --dry-run {opts}\nWhat is 2 + 2?')
        return capsys.readouterr().out.splitlines()[0]
    run(shell, '%load_ext boopiter_ext')
    run(shell, f'%boop model {MODEL}')
    assert 'Run for real' not in dry()                                         # nothing saved yet: it would ask
    srv.script('4.')
    run(shell, '%%prompt --no-context\nWhat is 2 + 2?')
    assert dry().endswith(_REUSE_NOTES['saved']) and 'Run for real' not in dry('--fresh')
    run(shell, '%boop model gemma3:4b')                                       # another model would answer now
    assert dry().endswith(_REUSE_NOTES['kept'].format(by=MODEL))
    assert 'Run for real' not in dry('-m gemma3:4b')                          # asked for by name: it asks
    n = len(srv.chats())
    res = run(shell, '%%prompt --no-context\nWhat is 2 + 2?')                 # and so it does: kept, no model asked
    assert res.success and len(srv.chats()) == n


def test_another_cells_reply_to_the_same_request_is_reused_when_the_asking_cell_has_none():
    other = reply_cell('from the copy above', 'sha256:a')
    other.cell_id = 'c1'
    assert find_saved_reply('sha256:a', [other], cell_id='c9')['data']['text/plain'] == 'from the copy above'
    assert find_saved_reply('sha256:a', [other])['data']['text/plain'] == 'from the copy above'   # no id known (headless)


def test_the_digest_covers_an_image_by_its_bytes_and_a_text_part_by_its_text():
    def with_image(data): return [mk_msg(['What is in it?', {'type': 'image_url', 'image_url': {'url': data}}])]
    a, b = 'data:image/png;base64,' + 'A' * 400, 'data:image/png;base64,' + 'A' * 399 + 'B'
    assert request_digest(MODEL, with_image(a), {}) == request_digest(MODEL, with_image(a), {})
    assert request_digest(MODEL, with_image(a), {}) != request_digest(MODEL, with_image(b), {})
    bare = [{'role': 'user', 'content': [{'type': 'text', 'text': 'What is in it?'}, {'type': 'image_url', 'image_url': a}]}]
    assert request_digest(MODEL, bare, {}) == request_digest(MODEL, with_image(a), {})   # the same bytes, the same digest


def test_a_saved_reply_s_options_are_used_only_when_well_formed():
    from boopiter_ext.core.replay import _saved_options
    assert _saved_options(dict(effort='h', context=dict(window=8192))) == dict(think='h', num_ctx=8192)
    assert _saved_options(dict(context=dict())) == dict(think=None, num_ctx=None)          # none saved: none asked
    assert _saved_options(dict(context=dict(window=0))) is None and _saved_options(dict(effort='max')) is None


def test_a_model_s_capabilities_keep_only_short_printable_names():
    info = clean_model_info(dict(capabilities=['', 'tools', 'x' * 64, 'x' * 65, 'a\nb', 3]))
    assert info['capabilities'] == ['tools', 'x' * 64]


def test_a_cassette_in_a_folder_not_made_yet_is_recorded_there(tmp_path):
    tape = Cassette(tmp_path/'ci'/'tapes'/'nb.cassette.json', recording=True)
    tape.add('sha256:a', MODEL, {}, dict(content='hi', reasoning='', status='done'))
    assert Cassette(tmp_path/'ci'/'tapes'/'nb.cassette.json').turns['sha256:a']['model'] == MODEL
