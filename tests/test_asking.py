"""Asking from code (`ask`, `stream`, `ask_all`, the seed's names) against the Ollama-protocol test server over HTTP:
answers, structured output on each route, retries, batches in order and at once, failures in place, interrupts that
keep what finished, progress, the cassette, and bad input refused before any request."""

import _thread, dataclasses, io, json, time
from typing import Literal
import pytest
from ollama_server import OllamaTestServer
from boopiter_ext.core.assistant import Assistant
from boopiter_ext.core.asking import Question
from boopiter_ext.core.batch import Failed, TextProgress
from boopiter_ext.errors import (AnswerInvalid, OllamaModelNotFound, ReplyInterrupted, SchemaError, SettingsError,
                                 TemplateError)
from boopiter_ext.faces import api

MODEL = 'qwen3:1.7b'


class NoCells:
    current = None
    def cells(self): return []


@pytest.fixture
def a(srv, monkeypatch):
    "A script's assistant (no kernel), on the test server."
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    a = Assistant(NoCells(), {})
    yield a
    a.close()


@pytest.fixture
def public(srv, monkeypatch):
    "The public calls, on a fresh assistant of their own (what a script gets)."
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    monkeypatch.setattr(api, '_own', None)
    yield api
    if api._own is not None: api._own.close()


def echo(body):
    return 'echo ' + body['messages'][-1]['content'] if isinstance(body['messages'][-1]['content'], str) else 'echo ?'


@dataclasses.dataclass
class Label:
    label: Literal['spam', 'ham']   # what the message is
    confidence: float = 1.0


def user_text(body): return body['messages'][-1]['content']


def test_ask_answers_alone_without_the_notebook_and_expands_no_variable(public, srv):
    srv.script('Paris.')
    assert public.ask('Capital of France? $secret', MODEL) == 'Paris.'
    body = srv.last_chat()
    assert [m['role'] for m in body['messages']] == ['system', 'user']
    assert user_text(body) == 'Capital of France? $secret'   # data stays data: no variable is read
    assert 'format' not in body
    n = len(srv.chats())
    assert public.ask('Capital of France? $secret', MODEL) == 'Paris.'   # asked again: reused by its digest
    assert len(srv.chats()) == n


def test_structured_answers_send_the_schema_to_ollama_and_come_back_as_values(public, srv):
    srv.script('{"label": "spam", "confidence": 0.9}')
    got = public.ask('Buy now!!!', MODEL, schema=Label)
    assert got == Label('spam', 0.9)
    body = srv.last_chat()
    assert body['format']['properties']['label'] == {'enum': ['spam', 'ham'], 'description': 'what the message is'}
    assert body['format']['required'] == ['label']
    assert 'JSON Schema' in user_text(body)   # every route gets the words too: one without constrained output follows them


def test_an_openai_compatible_server_gets_response_format(a, srv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path/'settings.ini').write_text(f'[boopiter]\napi_base = {srv.url}/v1\n')
    srv.script('Sure: {"label": "ham"} as asked.')   # JSON inside prose is found
    q = Question.of(a, 'openai/qwen3:1.7b', schema={'type': 'object', 'properties': {'label': {'enum': ['spam', 'ham']}},
                                                      'required': ['label']})
    assert q.answer('Hello mum')[0] == {'label': 'ham'}
    rf = srv.last_chat()['response_format']
    assert rf['type'] == 'json_schema' and rf['json_schema']['schema']['required'] == ['label']
    assert rf['json_schema']['strict'] is False   # an open object is not strict: OpenAI would refuse it as strict


def test_an_answer_that_does_not_validate_is_asked_again_then_refused_in_one_line(a, srv):
    srv.script('not json at all')
    srv.script('{"label": "eggs"}')
    srv.script('{"label": "ham"}')
    value, details = Question.of(a, MODEL, schema=Label).answer('Dinner at 8?')
    assert value == Label('ham') and details.tries == 3
    retry = srv.last_chat()['messages']
    assert retry[-2] == {'role': 'assistant', 'content': '{"label": "eggs"}'}
    assert "does not follow the schema: at $.label" in retry[-1]['content']
    for _ in range(2): srv.script('{"label": 3}')
    with pytest.raises(AnswerInvalid) as e: Question.of(a, MODEL, schema=Label, retries=1).answer('Lunch?')
    assert 'in 2 tries' in str(e.value) and '\n' not in str(e.value)


def test_a_batch_runs_at_once_up_to_the_servers_slots_and_keeps_the_input_order(monkeypatch):
    with OllamaTestServer(parallel=4, answer_s=0.05, responder=echo) as s:
        monkeypatch.setenv('OLLAMA_HOST', s.host)
        a = Assistant(NoCells(), {})
        try: got = Question.of(a, MODEL).ask_many([f'item {i}' for i in range(60)])
        finally: a.close()
        assert got == [f'echo item {i}' for i in range(60)]
        spans = sorted((r.t_start, r.t_end) for r in s.streams)
    most = max(sum(1 for s0, e0 in spans if s0 <= t < e0) for t, _ in spans)
    assert most == 4   # overlapping for real, and never past the server's slots (the measured limit went past it)


def test_a_set_limit_is_kept_and_one_at_a_time_never_overlaps(a, srv):
    srv.answer_s, srv.responder = 0.02, echo
    got = Question.of(a, MODEL).ask_many([f'n{i}' for i in range(8)], parallel=1)
    assert got == [f'echo n{i}' for i in range(8)]
    spans = sorted((r.t_start, r.t_end) for r in srv.streams)
    assert all(e0 <= s1 for (_, e0), (s1, _) in zip(spans, spans[1:]))


def test_a_failed_item_stays_in_its_place_and_the_rest_are_answered(a, srv):
    srv.responder = echo
    srv.script('', fault='http_error', status=500)
    got = Question.of(a, MODEL).ask_many(['first', 'second', 'third'], parallel=1)
    assert isinstance(got[0], Failed) and not got[0] and 'boom' in str(got[0].error)
    assert got[1:] == ['echo second', 'echo third']


def test_an_interrupt_keeps_what_finished_and_the_same_call_again_asks_only_for_the_rest(a, srv):
    srv.answer_s, srv.responder = 0.02, echo
    q, prompts = Question.of(a, MODEL), [f'row {i}' for i in range(40)]
    def progress(p):
        if p.done >= 10 and not p.finished and not fired: fired.append(_thread.interrupt_main())
    fired = []
    with pytest.raises(ReplyInterrupted) as e: q.ask_many(prompts, progress, parallel=2)
    asked = len(srv.chats())
    kept = int(str(e.value).split(':')[1].split()[0])
    assert 10 <= kept < 40 and 'run the same call again' in str(e.value)
    assert q.ask_many(prompts, parallel=2) == [f'echo {p}' for p in prompts]
    assert len(srv.chats()) - asked == 40 - kept   # only what was missing


def test_progress_on_a_terminal_line_says_count_speed_and_how_it_ended(a, srv):
    srv.responder = echo
    out = io.StringIO()
    Question.of(a, MODEL).ask_many(['a', 'b', 'c'], TextProgress(out, every=0), parallel=1)
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith('3 items in ') and '3 answered (3 asked, 0 reused)' in lines[-1]
    assert any(line.startswith(('1/3', '2/3')) for line in lines[:-1])


def test_templates_items_and_shapes(public, srv, tmp_path):
    pd = pytest.importorskip('pandas')
    srv.responder = echo
    df = pd.DataFrame({'text': ['hi', 'yo'], 'n': [1, 2]}, index=['x', 'y'])
    got = public.ask_all('Label {text} ({n})', df, MODEL, progress=False)
    assert isinstance(got, pd.Series) and list(got.index) == ['x', 'y'] and list(got) == ['echo Label hi (1)', 'echo Label yo (2)']
    s = pd.Series(['a', 'b'], index=[10, 20], name='t')
    assert public.ask_all('Say {}', s, MODEL, progress=False).to_dict() == {10: 'echo Say a', 20: 'echo Say b'}
    (tmp_path/'notes').mkdir()
    for name, text in (('b.txt', 'second'), ('a.txt', 'first')): (tmp_path/'notes'/name).write_text(text)
    assert public.ask_all('{stem}: {text}', tmp_path/'notes', MODEL, progress=False) == {'a.txt': 'echo a: first',
                                                                                          'b.txt': 'echo b: second'}
    assert public.ask_all(['Q1', 'Q2'], model=MODEL, progress=False) == ['echo Q1', 'echo Q2']


def test_bad_input_is_refused_before_any_request(public, srv):
    before = len(srv.chats())
    with pytest.raises(TemplateError, match=r"names 'txt', which item 1 does not have \(its fields: text\)"):
        public.ask_all('Label {txt}', [{'txt': 'a'}, {'text': 'b'}], MODEL)
    with pytest.raises(SchemaError, match='dataclass'): public.ask('x', MODEL, schema=int)
    with pytest.raises(SchemaError, match='not one of its instances'): public.ask('x', MODEL, schema=Label('ham'))
    with pytest.raises(OllamaModelNotFound): public.ask('x', 'nosuch:7b')
    with pytest.raises(SettingsError, match='no option temprature'): public.ask('x', MODEL, temprature=0.2)
    with pytest.raises(SettingsError, match='max_tokens'): public.ask('x', MODEL, max_tokens=-1)
    with pytest.raises(SettingsError, match='cannot see images'): public.ask('x', MODEL, images=[b'\x89PNG'])
    with pytest.raises(SettingsError, match='empty'): public.ask('  ', MODEL)
    assert len(srv.chats()) == before


def test_stream_tells_reasoning_from_answer_and_closing_it_hangs_up(public, srv):
    srv.script('The answer.', thinking='Let me see. ')
    got = list(public.stream('Why?', MODEL))
    assert ''.join(t for k, t in got if k == 'reasoning') == 'Let me see. '
    assert ''.join(t for k, t in got if k == 'answer') == 'The answer.'
    assert got[-1][0] == 'details' and got[-1][1].status == 'done' and got[-1][1].via == 'asked'
    srv.script(['tok '] * 400, delay=0.02)
    it = public.stream('Tell me a long story.', MODEL)
    assert next(it)[0] == 'answer'
    it.close()
    deadline = time.monotonic() + 5
    while not srv.streams[-1].disconnected and time.monotonic() < deadline: time.sleep(0.05)
    assert srv.streams[-1].disconnected and not srv.streams[-1].completed


def test_the_seeds_names_work_as_its_docs_say(public, srv):
    srv.script('The sum of 47 and 23 is 70.')
    content, details = public.prompt_llm("What's 47 + 23?", MODEL)
    assert content == 'The sum of 47 and 23 is 70.' and details.startswith('<details>') and MODEL in details
    assert 'picked by the call' in details
    srv.script('Hi there')
    events = list(public.stream_llm_reply('Say hi', MODEL))
    assert ''.join(e[1] for e in events if e[0] == 'delta') == 'Hi there'
    assert events[-1][0] == 'final' and events[-1][1] == 'Hi there' and '<details>' in events[-1][2]
    names = [t.__name__ for t in public.get_tool_list()]   # outside a prompt: the default sources, not []
    assert {'list_variables', 'read_file'} <= set(names)
    assert 'read_file' not in [t.__name__ for t in public.get_tool_list({'files': False})]


def test_tools_run_through_the_guarded_loop_when_asked(public, srv):
    calls = []
    def add_numbers(a:int,   # First number to add
                    b:int,   # Second number to add
                   )->int:
        "Add two numbers together"
        calls.append((a, b))
        return a + b
    srv.script('```python\nadd_numbers(47, 23)\n```')
    srv.script('It is 70.')
    assert public.ask("What's 47 + 23? Use the tool.", MODEL, tools=[add_numbers]) == 'It is 70.'
    assert calls == [(47, 23)]
    first = srv.chats()[-2]
    assert 'def add_numbers(\n    a:int,  # First number to add' in first['messages'][0]['content']
    assert '70' in json.dumps(srv.last_chat()['messages'][-1])
    srv.script('It is 5.')   # no call: told it owes one
    srv.script('```python\nadd_numbers(2, 3)\n```')
    srv.script('5.')
    assert public.ask('What is 2 + 3?', MODEL, tools=[add_numbers], must_call='add_numbers') == '5.'
    assert calls[-1] == (2, 3) and 'You must call `add_numbers` first' in json.dumps(srv.chats()[-2]['messages'])
    with pytest.raises(SettingsError, match='not offered'): public.ask('x', MODEL, tools=[add_numbers], must_call='nope')


def test_a_cassette_replays_a_batch_offline(a, tmp_path, monkeypatch):
    tape = tmp_path/'batch.cassette.json'
    with OllamaTestServer(responder=echo) as s:
        monkeypatch.setenv('OLLAMA_HOST', s.host)
        rec = Question.of(a, MODEL, cassette='record', cassette_file=str(tape)).ask_many(['p1', 'p2', 'p3'])
    assert rec == ['echo p1', 'echo p2', 'echo p3'] and len(json.loads(tape.read_text())['turns']) == 3
    off = Assistant(NoCells(), {})   # the server is gone; a new kernel's memory is empty
    try: assert Question.of(off, MODEL, cassette='replay', cassette_file=str(tape)).ask_many(['p1', 'p2', 'p3']) == rec
    finally: off.close()


def test_a_batch_spreads_over_the_named_endpoints_that_serve_the_model(a, tmp_path, monkeypatch):
    with OllamaTestServer(parallel=2, answer_s=0.03, responder=echo) as one, \
         OllamaTestServer(parallel=2, answer_s=0.03, responder=echo) as two:
        monkeypatch.chdir(tmp_path)
        (tmp_path/'settings.ini').write_text(f'[boopiter.endpoint.one]\nkind = ollama\nurl = {one.url}\n'
                                             f'[boopiter.endpoint.two]\nkind = ollama\nurl = {two.url}\n')
        got = Question.of(a, [f'@one/{MODEL}', f'@two/{MODEL}'], parallel=2).ask_many([f'i{i}' for i in range(20)])
        assert got == [f'echo i{i}' for i in range(20)]
        assert len(one.chats()) >= 4 and len(two.chats()) >= 4 and len(one.chats()) + len(two.chats()) == 20
        q = Question.of(a, f'@one/{MODEL}', spread=True)   # found by name: every listed server that has it (Ollama too)
        assert sorted(x.plan['model'] for x in [q, *q.others]) == [f'@one/{MODEL}', f'@two/{MODEL}', MODEL]
        assert q.plan['model'] == f'@one/{MODEL}' and len(q.lanes()) == 3
        assert Question.of(a, 'smollm2:135m', spread=True).others != [] and \
            not Question.of(a, 'gemma3:4b', spread=False).others


def test_the_namespace_gets_ask_unless_the_name_is_yours(shell):
    from boopiter_ext import load_ipython_extension, unload_ipython_extension
    unload_ipython_extension(shell)
    shell.user_ns['ask'] = 'my variable'
    load_ipython_extension(shell)
    assert shell.user_ns['ask'] == 'my variable' and shell.user_ns['ask_all'] is api.ask_all
    unload_ipython_extension(shell)
    assert shell.user_ns['ask'] == 'my variable' and 'ask_all' not in shell.user_ns


def test_the_same_calls_work_in_a_script(srv, tmp_path):
    "No IPython at all: settings files and the automatic choice; the progress line goes to stderr, the answers to stdout."
    import os, subprocess, sys
    srv.responder = echo
    script = tmp_path/'label.py'
    script.write_text("import sys\nfrom boopiter_ext import ask, ask_all\n"
                      "print(ask('one?'))\nprint(ask_all('Say {}', ['a', 'b', 'c']))\n"
                      "print('IPython' in sys.modules)\n")
    env = {**os.environ, 'OLLAMA_HOST': srv.host}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ['echo one?', "['echo Say a', 'echo Say b', 'echo Say c']", 'False']
    assert '3 items in ' in res.stderr and '3 answered (3 asked, 0 reused)' in res.stderr
