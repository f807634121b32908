"""Every value read from a file is validated at the boundary (issue 12, section 4).

A generated corpus of wrong types and extreme values (deep nesting, NaN and infinities, huge and negative
numbers, keys JSON cannot have, control characters and lone surrogates, far dates) is fed to each reader
of saved state: settings files, `%config` and `c.BoopMagics` values, the environment, the notebook's
binding, a saved notebook's outputs, cassettes and the reply cache. Each must return only valid values,
raise nothing but its one-line refusal, and name the file (or layer) and key of every value it refused.
Last, a prompt in a real kernel answers with a hostile notebook and a hostile settings.ini.
"""

import itertools, json
from collections import Counter
import pytest
from hypothesis import HealthCheck, event, given, settings as hsettings, strategies as st
from boopiter_ext.core.binding import BINDING_KEYS, BINDING_MIME, _when, clean_binding, saved_binding, stamp
from boopiter_ext.context.build import Cell, build_context, order_cells
from boopiter_ext.errors import CassetteDrift
from boopiter_ext.context.nbfile import DEPTH, saved_cells
from boopiter_ext.core.replay import (CASSETTE_FORMAT, MAX_CONTEXT_LENGTH, _SNAPSHOT, _INFO, Cassette, DiskCache,
                                      clean_model_info, clean_snapshot, find_saved_reply, request_digest,
                                      saved_auto_model, saved_model_info, saved_snapshot)
from boopiter_ext.settings import DEFAULTS, SETTINGS, _shown, check_setting, load_settings, read_ini

CORPUS = hsettings(max_examples=80, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
_n = itertools.count()

EXTREMES = ['', ' ', 'nan', 'NaN', 'inf', '-inf', '-1', '0', '-0', '1e308', '1e999', '9' * 5000, '4096.0', 'true', 'maybe',
            '9999-12-31T23:59:59.999+00:00', '0001-01-01T00:00:00+01:00', '2026-01-01T00:00:00', 'qwen3:1.7b', 'a b',
            '[::1', 'x:0', 'x:99999', 'http://', 'ftp://x', '\x00', '\x1b[31mred', '\u202e', 'record', 'l', '30s']
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=10**20, max_value=10**400),
                    st.integers(max_value=-1), st.floats(), st.text(max_size=20), st.sampled_from(EXTREMES))
values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=3) |
                      st.dictionaries(st.text(max_size=6) | st.sampled_from(['model', 'context_length', 'text/plain']),
                                      kids, max_size=4), max_leaves=12)
RAW = ['1e999', '-1e999', '9' * 5000, '-' + '9' * 5000, 'NaN', '-Infinity', '"\\ud800"', '"a\\u0000b"', '{}', '[]', 'true']
def nested(deepest): return st.integers(2, deepest).flatmap(lambda n: st.sampled_from(['[' * n + ']' * n, '{"a": ' * n + '1' + '}' * n]))
def fragments_to(deepest):
    "Raw JSON text: any value (NaN and Infinity included), numbers JSON has but Python cannot hold, or nesting."
    return st.one_of(values.map(json.dumps), st.sampled_from(RAW), nested(deepest))
fragments = fragments_to(3000)   # past 1,000 levels json.loads raises RecursionError: the file cannot be read at all
shallower = fragments_to(300)    # past DEPTH (64) only the value is dropped: the rest of the file is read


def hostile_dict(keys): return st.dictionaries(st.sampled_from(keys), values, max_size=len(keys))
def fill(skeleton, frags):
    "The JSON text of `skeleton` with each '@@Fi@@' string replaced by the raw JSON text `frags[i]`."
    text = json.dumps(skeleton)
    for i,f in enumerate(frags): text = text.replace(f'"@@F{i}@@"', f)
    return text
def encodes(v): return json.dumps(v, ensure_ascii=False).encode('utf-8') is not None   # no lone surrogate; not too deep
def unset(v): return v is None or isinstance(v, str) and v == ''


# -- settings: files, `%config` and `c.BoopMagics`, the environment

ini_text = st.one_of(st.sampled_from(EXTREMES), st.text(st.characters(blacklist_characters='\r\n', blacklist_categories=['Cs']),
                                                       max_size=30))


@CORPUS
@given(written=st.dictionaries(st.sampled_from([*SETTINGS, 'modle', 'api_key']), ini_text, max_size=8))
def test_a_settings_file_gives_valid_values_and_names_each_refused_key(tmp_path, written):
    path = tmp_path/f'{next(_n)}.ini'
    path.write_text('[boopiter]\n' + ''.join(f'{k} = {v}\n' for k,v in written.items()), encoding='utf-8')
    values, warnings = read_ini(path)
    assert all(v == '' or check_setting(k, v) for k,v in values.items())
    assert all(w.startswith(f'{path}: ') and '\n' not in w for w in warnings)
    for k in written:
        assert k in values or any(f'`{k} = ' in w or f'`{k}`' in w for w in warnings), k


@CORPUS
@given(runtime=hostile_dict(list(SETTINGS)), config=hostile_dict(list(SETTINGS)), host=ini_text | st.text(), cassette=st.text())
@pytest.mark.heavy
def test_config_layers_and_the_environment_give_valid_values_and_name_each_refused_key(tmp_path, runtime, config, host, cassette):
    s = load_settings(runtime=runtime, config=config, environ={'OLLAMA_HOST': host, 'BOOPITER_CASSETTE': cassette}, start=tmp_path)
    assert all(s.source[k] == 'default' and v == DEFAULTS[k] or check_setting(k, v) for k,v in s.items())
    shown = '\n'.join(s.warnings)
    for k,v in runtime.items():   # the highest layer here: each refusal is named
        if not unset(v) and not check_setting(k, v): assert f'%config: `{k} = {_shown(v, k)}`' in shown
    for k,v in config.items():    # named where nothing above it set the key
        if not unset(v) and not check_setting(k, v) and unset(runtime.get(k)): assert f'c.BoopMagics: `{k} = ' in shown
    assert all('\n' not in w for w in s.warnings) and s.notes == s.warnings   # no settings file: nothing to shorten


# -- the notebook: its binding, its outputs, its saved replies

@CORPUS
@given(data=st.dictionaries(st.one_of(st.sampled_from([*BINDING_KEYS, 'picked_at', 'host']), st.text(max_size=5), st.integers()),
                            values, max_size=8))
@pytest.mark.heavy
def test_a_binding_of_any_shape_gives_valid_picks_a_believable_stamp_and_named_refusals(data):
    refused = []
    b = clean_binding(data, refused)
    assert all(check_setting(k, v) for k,v in b.items() if k != 'picked_at') and set(b) <= {*BINDING_KEYS, 'picked_at'}
    assert 'picked_at' not in b or _when(b['picked_at']) is not None
    for k in BINDING_KEYS:
        if k in data and not unset(data[k]) and k not in b: assert any(f'`{k} = ' in w for w in refused)
    assert _when(stamp(b)['picked_at']) is not None   # never overflows, never out of range


def notebook_skeleton():
    reply_md = dict(reply=True, digest='sha256:x', status='done', model='@@F12@@', model_source='auto', model_info='@@F13@@',
                    ttft_s='@@F14@@', reasoning='@@F15@@', tool_calls='@@F16@@', completion_tokens='@@F23@@')
    outputs = [dict(output_type='error', ename='@@F3@@', evalue='@@F4@@', traceback='@@F5@@'),
               dict(output_type='stream', name='@@F6@@', text='@@F7@@'),
               dict(output_type='display_data', metadata={}, data={BINDING_MIME: '@@F8@@', 'text/plain': 'b'}),
               dict(output_type='display_data', metadata={'boopiter': reply_md},
                    data={'text/plain': '@@F9@@', 'image/png': '@@F10@@', 'application/json': '@@F11@@'}),
               '@@F17@@']
    return dict(nbformat=4, nbformat_minor=5, metadata={}, cells=[
        dict(cell_type='code', id='@@F0@@', source='@@F1@@', execution_count='@@F2@@', metadata={}, outputs=outputs),
        dict(cell_type='markdown', source='@@F18@@', attachments='@@F19@@', metadata={}), '@@F20@@',
        dict(cell_type='code', source='%%prompt\nq', outputs='@@F21@@', metadata='@@F22@@')])


def clean_shape(c:Cell)->bool:
    "Whether a saved cell is as readers trust it: texts are strings, tracebacks lists of strings, JSON not too deep."
    assert isinstance(c.source, str) and c.kind in ('code', 'prompt', 'markdown') and c.origin == 'file'
    assert c.cell_id is None or isinstance(c.cell_id, str)
    assert c.exec_count is None or isinstance(c.exec_count, int) and not isinstance(c.exec_count, bool)
    assert isinstance(c.attachments, dict) and all(isinstance(b, dict) for b in c.attachments.values())
    for o in c.outputs:
        assert isinstance(o, dict) and isinstance(o['metadata'], dict)
        if o['output_type'] == 'stream': assert isinstance(o['text'], str) and o['name'] in ('stdout', 'stderr')
        elif o['output_type'] == 'error':
            assert isinstance(o['ename'], str) and isinstance(o['evalue'], str)
            assert isinstance(o['traceback'], list) and all(isinstance(s, str) for s in o['traceback'])
        else:
            assert o['output_type'] in ('display_data', 'execute_result') and isinstance(o['data'], dict)
            assert all(isinstance(v, str) for m,v in o['data'].items() if not m.endswith('json'))
    return encodes([c.source, c.outputs, c.attachments])


def binding_payloads(): return hostile_dict([*BINDING_KEYS, 'picked_at', 'version']).map(json.dumps) | shallower


@CORPUS
@given(frags=st.tuples(*[binding_payloads() if i == 8 else hostile_dict(['capabilities', 'context_length', 'vision']).map(json.dumps)
                         | shallower if i == 13 else shallower for i in range(24)]), deep=fragments, where=st.integers(0, 23))
@pytest.mark.heavy
def test_a_saved_notebook_of_any_shape_reads_as_clean_cells_or_not_at_all(tmp_path, frags, deep, where):
    path = tmp_path/f'{next(_n)}.ipynb'
    path.write_text(fill(notebook_skeleton(), frags if where else [deep, *frags[1:]]))   # now and then one very deep
    cells = saved_cells(path)
    event('read' if cells is not None else 'unreadable')
    assert cells is None or all(map(clean_shape, cells))
    b = saved_binding(path)
    assert b is None or all(check_setting(k, v) for k,v in b.items() if k != 'picked_at')
    assert all(w.startswith(f'the binding saved in {path.name}: `') for w in getattr(b, 'refused', []))
    cells = cells or []
    msgs, ledger = build_context(order_cells([], cells, None), 'What failed?', vision=True)
    assert request_digest('m', msgs, {}).startswith('sha256:') and msgs[-1]['role'] == 'user'
    if (found := find_saved_reply('sha256:x', cells)) is not None:
        snap = saved_snapshot(found)
        assert all(_SNAPSHOT[k](v) for k,v in snap.items()) and all(_INFO[k](v) for k,v in snap['info'].items())
    info = saved_model_info(cells[0].outputs[-1]['metadata']['boopiter'].get('model') if cells and cells[0].outputs
                            and cells[0].outputs[-1].get('metadata', {}).get('boopiter') else 'x', cells)
    assert info is None or valid_model_info(info)
    assert saved_auto_model(cells) in (None,) or check_setting('model', saved_auto_model(cells))


def valid_model_info(info)->bool:
    assert set(info) <= {'capabilities', 'context_length', 'vision'}
    assert info['context_length'] is None or type(info['context_length']) is int and 0 < info['context_length'] <= MAX_CONTEXT_LENGTH
    assert 'vision' not in info or type(info['vision']) is bool
    assert 'capabilities' not in info or all(type(c) is str for c in info['capabilities'])
    return True


def test_saved_outputs_are_normalised_where_they_are_read(tmp_path):
    outs = [dict(output_type='error', ename=404, evalue=None, traceback='Traceback (one string)\nValueError: x'),
            dict(output_type='error', ename='E', evalue='v', traceback=['a', 5, None, ['b']]),
            dict(output_type='stream', name='stdin', text=['a', 'b']), dict(output_type='stream', text=['a', 3]),
            dict(output_type='display_data', data={'text/plain': ['x', 'y'], 'text/html': 7, 'image/png': ['iVBO', 'Rw=='],
                                                   'application/json': {'a': [[[[1]]]]}, 'application/x+json': 'as text'},
                 metadata=['not', 'a', 'dict']),
            dict(output_type='execute_result', data='nope', metadata={'boopiter': {'reply': True}}, execution_count=-1, extra=1),
            dict(output_type='update_display_data', data={}), 'junk', None]
    nb = dict(cells=[dict(cell_type='code', source=['x', ' = ', 1], id=7, execution_count=True, outputs=outs),
                     dict(cell_type='raw', source='r'), dict(cell_type='markdown', source='m', attachments=dict(a=[], b={'image/png': 5}))])
    (tmp_path/'n.ipynb').write_text(json.dumps(nb))
    code, md = saved_cells(tmp_path/'n.ipynb')
    assert (code.source, code.cell_id, code.exec_count, md.attachments) == ('x = ', None, None, {'b': {}})
    assert code.outputs == [
        dict(output_type='error', metadata={}, ename='404', evalue='', traceback=['Traceback (one string)\nValueError: x']),
        dict(output_type='error', metadata={}, ename='E', evalue='v', traceback=['a']),
        dict(output_type='stream', metadata={}, name='stdout', text='ab'), dict(output_type='stream', metadata={}, name='stdout', text='a'),
        dict(output_type='display_data', metadata={}, data={'text/plain': 'xy', 'image/png': 'iVBORw==',
                                                            'application/json': {'a': [[[[1]]]]}, 'application/x+json': 'as text'}),
        dict(output_type='execute_result', metadata={'boopiter': {'reply': True}}, data={}, execution_count=None)]
    deep = dict(cells=[dict(cell_type='code', source='x', outputs=[dict(output_type='display_data', metadata={'a': 1},
                                                                         data={'application/json': 'DEEP', 'text/plain': 'shown'})])])
    (tmp_path/'d.ipynb').write_text(json.dumps(deep).replace('"DEEP"', '[' * (DEPTH + 1) + ']' * (DEPTH + 1)))
    [c] = saved_cells(tmp_path/'d.ipynb')
    assert c.outputs[0]['data'] == {'text/plain': 'shown'}   # too deep to walk safely: dropped, the rest kept
    (tmp_path/'x.ipynb').write_text('{"cells": ' + '[' * 100_000 + ']' * 100_000 + '}')
    assert saved_cells(tmp_path/'x.ipynb') is None            # json.loads would raise RecursionError


# -- cassettes and the reply cache

snapshots = hostile_dict([*_SNAPSHOT, 'info']) | st.fixed_dictionaries({'info': hostile_dict(list(_INFO))})


def test_a_cassette_of_any_shape_is_read_clean_or_refused_in_one_line(tmp_path):
    ended = Counter()   # a refused cassette checks only its line: enough must be read, and some turns of them

    @CORPUS
    @given(frags=st.tuples(*[hostile_dict(['capabilities', 'context_length', 'vision']).map(json.dumps) | fragments_to(70),
                             fragments_to(70), fragments_to(70), snapshots.map(json.dumps) | fragments_to(70),
                             *[fragments_to(70)] * 2, fragments]))
    def cassettes(frags):
        digest = 'sha256:' + 'ab' * 32
        skeleton = dict(format=CASSETTE_FORMAT, version=1, models={'qwen3:1.7b': '@@F0@@', 'm': '@@F6@@'}, auto_model='@@F1@@',
                        turns=[dict(digest=digest, model='qwen3:1.7b', options='@@F2@@', reply='@@F3@@', recorded_at='@@F4@@'),
                               '@@F5@@'])
        path = tmp_path/f'{next(_n)}.cassette.json'
        path.write_text(fill(skeleton, frags))
        try: c = Cassette(path)
        except CassetteDrift as e:
            assert '\n' not in str(e) and path.name in str(e)
            ended['refused'] += 1
            return event('refused')
        event('read')
        ended['read'] += 1
        ended['with turns'] += bool(c.turns)
        assert all(valid_model_info(i) for i in c.models.values())
        assert c.auto_model is None or check_setting('model', c.auto_model)
        assert all(w.startswith(f'{path.name}: ') and '\n' not in w for w in c.warnings)
        for d in c.turns:
            snap = c.reply(d, 'qwen3:1.7b')
            assert all(_SNAPSHOT[k](v) for k,v in snap.items()) and all(_INFO[k](v) for k,v in snap['info'].items())
        c.add('sha256:' + 'cd' * 32, 'qwen3:1.7b', {}, dict(answer='new'))   # writes back what it read
        assert len(Cassette(path)) == len(c)
    cassettes()
    # about 80% are read, two thirds of them with turns
    assert ended['read'] >= 0.5 * (ended['read'] + ended['refused']) and ended['with turns'] >= 0.3 * ended['read'], ended


@CORPUS
@given(frags=st.tuples(fragments, fragments, fragments, fragments), whole=st.booleans())
def test_a_reply_cache_file_of_any_shape_gives_a_clean_output_or_none(tmp_path, frags, whole):
    folder = tmp_path/str(next(_n))
    folder.mkdir()
    skeleton = dict(output_type='display_data', data={'text/plain': '@@F0@@', 'text/markdown': '@@F1@@'},
                    metadata={'boopiter': '@@F2@@'}, extra='@@F3@@')
    (folder/'ab.json').write_text(frags[0] if whole else fill(skeleton, frags))
    o = DiskCache(folder).get('sha256:ab')
    assert o is None or o['data'] and all(isinstance(v, str) for v in o['data'].values()) and encodes(o)
    if o is not None: assert all(_SNAPSHOT[k](v) for k,v in saved_snapshot(o).items())


@CORPUS
@given(d=values | snapshots, info=values | hostile_dict(['capabilities', 'context_length', 'vision']))
@pytest.mark.heavy
def test_snapshots_and_model_info_of_any_shape_come_back_valid(d, info):
    snap = clean_snapshot(d)
    assert all(_SNAPSHOT[k](v) for k,v in snap.items()) and all(_INFO[k](v) for k,v in snap['info'].items()) and encodes(snap)
    assert valid_model_info(clean_model_info(info))


# -- end to end: a real kernel, a hostile notebook and a hostile settings.ini

def hostile_notebook(path):
    "A notebook someone else wrote: a binding with bad values and a far-future stamp, odd errors, bad reply metadata."
    binding = {'version': 1, 'model': 'smollm2:135m', 'keep_alive': '1e9', 'context_size': -5,
               'picked_at': '9999-12-31T23:59:59.999+00:00'}
    reply_md = dict(reply=True, digest='sha256:nope', status='done', model='smollm2:135m', model_source='auto',
                    model_info=dict(context_length='lots', capabilities='all', vision='yes'), ttft_s='soon', tool_calls=[[[]]])
    cells = [dict(cell_type='code', id='b', source='%boop', metadata={}, execution_count=1,
                  outputs=[dict(output_type='display_data', metadata={'boopiter': {'binding': True}},
                                data={BINDING_MIME: binding, 'text/plain': 'boopiter binding'})]),
             dict(cell_type='code', id='e', source='1/0', metadata={}, execution_count=2,
                  outputs=[dict(output_type='error', ename=7, evalue=['x'], traceback='ZeroDivisionError: division by zero'),
                           dict(output_type='stream', name='stdout', text=['partial ', 5, 'line']),
                           dict(output_type='display_data', metadata=[], data={'application/json': 'DEEP', 'text/plain': 3})]),
             dict(cell_type='code', id='p0', source='%%prompt\nold question', metadata={}, execution_count=3,
                  outputs=[dict(output_type='display_data', metadata={'boopiter': reply_md},
                                data={'text/plain': ['an old ', 'reply'], 'text/markdown': '<script>x()</script>'})]),
             dict(cell_type='code', id='p1', source='%%prompt\nWhat failed?', metadata={}, outputs=[])]
    text = json.dumps(dict(nbformat=4, nbformat_minor=5, metadata={}, cells=cells))
    path.write_text(text.replace('"DEEP"', '[' * 500 + ']' * 500))
    return path


@pytest.mark.slow
def test_a_prompt_answers_with_a_hostile_notebook_and_settings_file(srv, tmp_path):
    from kernels import KernelSession
    (tmp_path/'settings.ini').write_text('[boopiter]\ntimeout = nan\ncontext_size = -5\n')
    path = hostile_notebook(tmp_path/'hostile.ipynb')
    srv.script('It divided by zero.')
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(path)}) as kernel:
        kernel.run('1/0')   # ran before loading: the context shows it with its outputs from the saved file
        assert kernel.run('%load_ext boopiter_ext').status == 'ok'
        res = kernel.run('%%prompt\nWhat failed?', cell_id='p1')
        status = kernel.run('%boop status').text
    assert res.status == 'ok' and res.error is None and 'Traceback' not in res.text and res.text == ''
    assert res.reply['data']['text/plain'] == 'It divided by zero.'
    chat = srv.last_chat()
    assert chat['model'] == 'smollm2:135m'                     # the binding's good value applies
    assert chat['options']['num_ctx'] == 4096 and 'keep_alive' not in chat   # its bad ones, and the file's, do not: auto
    sent = '\n'.join(m['content'] for m in chat['messages'])
    assert 'ZeroDivisionError: division by zero\n7: \npartial line' in sent   # odd outputs, read
    assert [m['content'] for m in chat['messages'][-2:]] == ['an old reply', 'What failed?']   # the saved turn, then this
    md = res.reply['data']['text/markdown']
    notes = [line for line in md.splitlines() if 'Note: ' in line]
    assert len(notes) == 1 and '`keep_alive = 1e9` is not minutes' in notes[0] and '`context_size = -5`' in notes[0]
    assert status.count(f'warning   {tmp_path/"settings.ini"}: `timeout = nan` is not a number of seconds') == 1
    assert status.count(f'warning   {tmp_path/"settings.ini"}: `context_size = -5` is not') == 1
    assert 'warning   the binding saved in hostile.ipynb: `keep_alive = 1e9`' in status


@pytest.mark.slow
def test_a_prompt_names_a_refused_settings_file_value_once(kernel, srv, tmp_path):
    (tmp_path/'settings.ini').write_text('[boopiter]\ntimeout = nan\n')
    srv.script('one')
    srv.script('two')
    first = kernel.run('%%prompt\nq1').reply['data']['text/markdown']
    second = kernel.run('%%prompt\nq2').reply['data']['text/markdown']
    assert first.count('settings.ini: `timeout = nan` is not a number of seconds') == 1 and 'timeout = nan' not in second
