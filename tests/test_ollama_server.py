"""Fidelity tests for tests/ollama_server.py against the real clients."""

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import ollama
import openai
import pytest
import requests

os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'  # before litellm is ever imported

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # tests/ is not a package
    sys.path.insert(0, HERE)

from ollama_server import (  # noqa: E402
    DEFAULT_MODELS, MID_STREAM_ERROR, OllamaTestServer, free_port, split_pieces,
)

MODEL = 'qwen3:1.7b'
MESSAGES = [{'role': 'user', 'content': 'Say hello, twice please.'}]
REPLY = '  Hello there,\n\nhello again!\n  Bye.  \n'


@pytest.fixture
def srv():
    with OllamaTestServer() as server:
        yield server


@pytest.fixture
def client(srv):
    with ollama.Client(host=srv.url) as c:
        yield c


def post_chat(srv, timeout=5, **body):
    """A raw streaming /api/chat request (the caller closes it)."""
    payload = {'model': MODEL, 'messages': MESSAGES, **body}
    return requests.post(srv.url + '/api/chat', json=payload, stream=True, timeout=timeout)


def wait_for(predicate, timeout=3.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ------------------------------------------------------------ basics

def test_split_pieces_round_trips():
    assert split_pieces('  a b\n\nc  ') == ['  a ', 'b\n\n', 'c  ']
    assert split_pieces(' \n ') == [' \n ']
    assert split_pieces(['x', 'y']) == ['x', 'y']
    assert ''.join(split_pieces(REPLY)) == REPLY


def test_root_version_and_host(srv):
    assert requests.get(srv.url, timeout=5).text == 'Ollama is running'
    assert requests.head(srv.url, timeout=5).status_code == 200
    assert 'version' in requests.get(srv.url + '/api/version', timeout=5).json()
    assert srv.url == f'http://127.0.0.1:{srv.port}' and srv.host == f'127.0.0.1:{srv.port}'
    assert requests.get(srv.url + '/nope', timeout=5).status_code == 404


def test_refused_port_is_a_connection_error():
    with pytest.raises(requests.ConnectionError):
        requests.get(f'http://127.0.0.1:{free_port()}/api/tags', timeout=3)
    with ollama.Client(host=f'127.0.0.1:{free_port()}') as c, pytest.raises(ConnectionError):
        c.list()


# ------------------------------------------------------- ollama client

def test_list_names_unsorted(client):
    names = [m.model for m in client.list().models]
    assert sorted(names) == sorted(m['name'] for m in DEFAULT_MODELS)
    assert names != sorted(names)
    first = client.list().models[0]
    assert first.digest.startswith('sha256:') and len(first.digest) == 71
    assert first.details.quantization_level and first.size > 0


def test_show_capabilities_and_context(client):
    info = client.show(MODEL)
    assert {'completion', 'tools', 'thinking'} <= set(info.capabilities)
    assert info.modelinfo['general.architecture'] == 'qwen3'
    assert info.modelinfo['qwen3.context_length'] == 40960
    assert info.details.family == 'qwen3' and info.modified_at is not None
    assert 'vision' in client.show('gemma3:4b').capabilities


def test_show_unknown_model_is_404(client):
    with pytest.raises(ollama.ResponseError) as err:
        client.show('nope:1b')
    assert err.value.status_code == 404
    assert err.value.error == "model 'nope:1b' not found"


def test_show_delay_allows_parallel_probing():
    with OllamaTestServer(show_delay=0.2) as srv:
        def probe(name):
            return requests.post(srv.url + '/api/show', json={'model': name}, timeout=5).status_code

        names = [m['name'] for m in DEFAULT_MODELS] * 2
        start = time.monotonic()
        with ThreadPoolExecutor(6) as pool:
            codes = list(pool.map(probe, names))
        parallel = time.monotonic() - start
        start = time.monotonic()
        assert [probe(n) for n in names] == codes == [200] * 6
        serial = time.monotonic() - start
    assert serial >= 1.2 and parallel < serial / 2, (parallel, serial)   # the delays overlap: ~1/6 of the serial time


def test_chat_stream_concatenates_exactly(srv, client):
    srv.script(REPLY)
    parts = list(client.chat(MODEL, messages=MESSAGES, stream=True))
    assert ''.join(p.message.content for p in parts) == REPLY
    last = parts[-1]
    assert last.done and last.done_reason == 'stop'
    assert last.eval_count == len(split_pieces(REPLY)) == len(parts) - 1
    assert last.prompt_eval_count == len(MESSAGES[0]['content']) // 4
    assert last.total_duration >= last.eval_duration > 0


def test_chat_without_stream(srv, client):
    srv.script(REPLY, done_reason='length')
    resp = client.chat(MODEL, messages=MESSAGES, stream=False)
    assert resp.message.content == REPLY and resp.message.role == 'assistant'
    assert resp.done and resp.done_reason == 'length'
    assert srv.last_chat()['stream'] is False


def test_default_reply_and_stream_by_default(srv):
    with post_chat(srv) as r:  # no "stream" key: Ollama streams
        assert r.headers['Content-Type'] == 'application/x-ndjson'
        assert r.headers['Transfer-Encoding'] == 'chunked'
        lines = [json.loads(line) for line in r.iter_lines()]
    assert ''.join(x['message']['content'] for x in lines) == srv.default_reply


def test_thinking_streams_before_content(srv, client):
    srv.script(['An', 'swer.'], thinking='First I think.\nThen I answer. ')
    parts = list(client.chat(MODEL, messages=MESSAGES, stream=True, think=True))
    thinking = [p.message.thinking for p in parts if p.message.thinking]
    assert ''.join(thinking) == 'First I think.\nThen I answer. '
    kinds = ['t' if p.message.thinking else 'c' for p in parts if p.message.thinking or p.message.content]
    assert kinds == ['t'] * 6 + ['c'] * 2
    assert parts[-1].eval_count == 8


def test_capability_errors_like_ollama(client):
    with pytest.raises(ollama.ResponseError) as err:
        client.chat('gemma3:4b', messages=MESSAGES, think=True)
    assert err.value.status_code == 400 and 'does not support thinking' in err.value.error


def test_chat_unknown_model_is_404(client):
    with pytest.raises(ollama.ResponseError) as err:
        list(client.chat('missing:7b', messages=MESSAGES, stream=True))
    assert err.value.status_code == 404
    assert err.value.error == "model 'missing:7b' not found"


def test_ps_after_chat_and_unload(srv, client):
    assert client.ps().models == []
    client.chat(MODEL, messages=MESSAGES)
    [running] = client.ps().models
    assert running.model == MODEL and running.context_length == 40960
    assert running.size_vram == running.size and running.expires_at is not None
    unloaded = client.generate(MODEL, keep_alive=0)
    assert unloaded.done and unloaded.done_reason == 'unload' and unloaded.response == ''
    assert client.ps().models == []


def test_loaded_is_settable(srv, client):
    srv.loaded = {'gemma3:4b', 'smollm2:135m'}
    assert {m.name for m in client.ps().models} == {'gemma3:4b', 'smollm2:135m'}
    srv.reset()
    assert client.ps().models == []


def test_generate_with_prompt_streams_response(srv, client):
    srv.script('Blue, mostly.')
    parts = list(client.generate(MODEL, 'Why is the sky blue?', stream=True))
    assert ''.join(p.response for p in parts) == 'Blue, mostly.'
    assert parts[-1].done and parts[-1].eval_count == 2
    assert client.generate('gemma3:4b', 'hi').response == srv.default_reply


def test_error_line_raises_in_ollama_client(srv, client):
    srv.script('a b c', fault='error_line', after=2)
    got = []
    with pytest.raises(ollama.ResponseError, match=MID_STREAM_ERROR):
        for part in client.chat(MODEL, messages=MESSAGES, stream=True):
            got.append(part.message.content)
    assert got == ['a ', 'b ']


def test_http_error_raises_in_ollama_client(srv, client):
    srv.script(fault='http_error')
    with pytest.raises(ollama.ResponseError) as err:
        list(client.chat(MODEL, messages=MESSAGES, stream=True))
    assert err.value.status_code == 500 and err.value.error == 'boom: scripted failure'


# ------------------------------------------------------ litellm, openai

@pytest.mark.heavy   # imports litellm: 3-4 s
def test_litellm_ollama_chat_stream(srv):
    import litellm

    srv.script(REPLY)
    stream = litellm.completion(model=f'ollama_chat/{MODEL}', api_base=srv.url,
                                messages=MESSAGES, stream=True)
    text = ''.join(chunk.choices[0].delta.content or '' for chunk in stream)
    assert text == REPLY
    sent = srv.last_chat()
    assert sent['model'] == MODEL and sent['stream'] is True
    assert [(m['role'], m['content']) for m in sent['messages']] == [('user', MESSAGES[0]['content'])]


@pytest.fixture
def oai(srv):
    with openai.OpenAI(base_url=srv.url + '/v1', api_key='x', max_retries=0) as c:
        yield c


def test_openai_stream_with_usage(srv, oai):
    srv.script(REPLY, thinking='Hmm. ')
    chunks = list(oai.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True,
                                              stream_options={'include_usage': True}))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert ''.join(d.content or '' for d in deltas) == REPLY
    assert ''.join(getattr(d, 'reasoning_content', None) or '' for d in deltas) == 'Hmm. '
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == 'stop'
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage.completion_tokens == len(split_pieces(REPLY)) + 1
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert srv.last_chat()['messages'] == MESSAGES


def test_openai_models_and_non_stream(srv, oai):
    assert sorted(m.id for m in oai.models.list()) == sorted(m['name'] for m in DEFAULT_MODELS)
    srv.script(REPLY)
    resp = oai.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert resp.choices[0].message.content == REPLY and resp.usage.total_tokens > 0


def test_openai_errors(srv, oai):
    srv.script(fault='http_error', status=503, body={'error': {'message': 'overloaded'}})
    with pytest.raises(openai.APIStatusError) as err:
        oai.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    assert err.value.status_code == 503 and 'overloaded' in str(err.value)
    with pytest.raises(openai.NotFoundError):
        oai.chat.completions.create(model='missing:1b', messages=MESSAGES)
    srv.script('a b', fault='error_line', after=1)
    with pytest.raises(openai.APIError, match=MID_STREAM_ERROR):
        list(oai.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True))


# -------------------------------------------------------- faults (raw)

def test_http_error_relayed(srv):
    srv.script(fault='http_error', status=503, body={'error': 'server busy'})
    with post_chat(srv) as r:
        assert r.status_code == 503 and r.json() == {'error': 'server busy'}
    with post_chat(srv) as r:  # the fault applied to one reply only
        assert r.status_code == 200


def test_drop_breaks_the_chunked_stream(srv):
    srv.script('one two three four', fault='drop', after=2)
    got = []
    with pytest.raises((requests.exceptions.ChunkedEncodingError, requests.ConnectionError)):
        with post_chat(srv) as r:
            got.extend(json.loads(line)['message']['content'] for line in r.iter_lines())
    assert got == ['one ', 'two ']
    assert srv.streams[-1].pieces == 2 and not srv.streams[-1].completed


def test_stall_times_out_and_server_sees_disconnect(srv):
    srv.script('one two three', fault='stall', after=1)
    got = []
    start = time.monotonic()
    # requests reports a read timeout inside a streamed body as ConnectionError, not ReadTimeout
    with pytest.raises(requests.ConnectionError, match='Read timed out'):
        with post_chat(srv, timeout=(3, 0.5)) as r:
            got.extend(r.iter_lines())
    assert len(got) == 1
    assert wait_for(lambda: srv.streams[-1].disconnected)
    rec = srv.streams[-1]
    assert rec.pieces == 1 and not rec.completed
    assert 0.4 < rec.disconnect_t - start < 3


@pytest.mark.parametrize('path', ['/api/chat', '/v1/chat/completions'])
def test_trickle_sends_bytes_that_never_finish_a_line(srv, path):
    "Bytes keep coming (a per-read timeout never fires) but no line ends after the first piece, until the client leaves."
    srv.script('one two three', fault='trickle', after=1, trickle_s=0.05, stall_s=30)
    payload = {'model': MODEL, 'messages': MESSAGES, 'stream': True}
    got, start = [], time.monotonic()
    with requests.post(srv.url + path, json=payload, stream=True, timeout=(3, 0.5)) as r:
        lines = r.iter_lines()
        while (line := next(lines)) == b'': pass
        got.append(line)
        while time.monotonic() - start < 1.2 and srv.streams[-1].trickled < 12:
            time.sleep(0.05)
        raw = r.raw.read(8, decode_content=True)   # the next bytes: trickled, and no newline among them
    assert b'one ' in got[0] and srv.streams[-1].pieces == 1 and srv.streams[-1].trickled >= 12
    assert raw and b'\n' not in raw
    assert wait_for(lambda: srv.streams[-1].disconnected) and not srv.streams[-1].completed


def test_trickle_ends_with_a_hang_up_after_stall_s_and_also_trickles_whole_replies(srv):
    srv.script('a b', fault='trickle', trickle_s=0.02, stall_s=0.3)
    with pytest.raises((requests.exceptions.ChunkedEncodingError, requests.ConnectionError)):
        with post_chat(srv) as r: list(r.iter_lines())
    assert 5 <= srv.streams[-1].trickled <= 20 and not srv.streams[-1].completed
    srv.script('a b', fault='trickle', trickle_s=0.02, stall_s=0.3)
    with post_chat(srv, stream=False) as r:
        with pytest.raises((requests.exceptions.ChunkedEncodingError, requests.ConnectionError)): r.content
    assert r.status_code == 200 and srv.streams[-1].trickled >= 5


def test_client_closing_mid_stream_is_recorded(srv):
    srv.script(['x '] * 100, delay=0.02)
    with post_chat(srv) as r:
        lines = r.iter_lines()
        next(lines), next(lines)
    assert wait_for(lambda: srv.streams[-1].disconnected)
    assert 2 <= srv.streams[-1].pieces < 100


def test_malformed_line_then_normal(srv):
    srv.script('a b c', fault='malformed', after=1)
    with post_chat(srv) as r:
        lines = list(r.iter_lines())
    assert lines[1] == b'this is not json'
    good = [json.loads(line) for line in lines[:1] + lines[2:]]
    assert ''.join(x['message']['content'] for x in good) == 'a b c' and good[-1]['done']


def test_error_line_ends_stream(srv):
    srv.script('a b c', fault='error_line', after=2)
    with post_chat(srv) as r:
        lines = [json.loads(line) for line in r.iter_lines()]
    assert len(lines) == 3 and lines[-1] == {'error': MID_STREAM_ERROR}
    assert not any(x.get('done') for x in lines)


def test_recording_and_reset(srv, client):
    srv.script('x')
    client.chat(MODEL, messages=MESSAGES)
    requests.post(srv.url + '/v1/chat/completions', timeout=5,
                  json={'model': MODEL, 'messages': [{'role': 'user', 'content': 'v1'}]})
    req = next(r for r in srv.requests if r.path == '/api/chat')
    assert req.method == 'POST' and req.json['messages'] == MESSAGES and req.t > 0
    assert req.headers['content-type'] == 'application/json'
    assert req.headers['user-agent'].startswith('ollama-python/')
    assert [c['messages'][0]['content'] for c in srv.chats()] == [MESSAGES[0]['content'], 'v1']
    assert srv.last_chat()['messages'][0]['content'] == 'v1'
    assert [s.path for s in srv.streams] == ['/api/chat', '/v1/chat/completions']
    srv.script('queued')
    srv.reset()
    assert srv.requests == [] and srv.streams == [] and srv.chats() == []
    assert client.chat(MODEL, messages=MESSAGES).message.content == srv.default_reply


# ------------------------------------------------------ speed and CLI

def test_twenty_thousand_chunks(srv):
    srv.script_chunks(20_000)
    start = time.perf_counter()
    with post_chat(srv) as r:
        count = 0
        for line in r.iter_lines():
            count += 1
            last = line
    elapsed = time.perf_counter() - start
    print(f'20,000 NDJSON chunks in {elapsed:.3f} s')   # bench/streaming.py measures the rate; here, that all arrive
    assert count == 20_001 and json.loads(last)['eval_count'] == 20_000


def test_cli_serves_until_interrupted():
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, 'ollama_server.py'), '--chunks', '3'],
                            stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        with requests.post(url + '/api/chat', json={'model': MODEL, 'messages': MESSAGES}, timeout=5) as r:
            assert [json.loads(x)['message']['content'] for x in r.iter_lines()][:3] == ['tok '] * 3
    finally:
        proc.send_signal(signal.SIGINT)
        try: code = proc.wait(60)   # traced by coverage on a loaded machine, it saves its data as it exits: 5 s was short
        except subprocess.TimeoutExpired:   # it hung once in a whole run: its threads' stacks go to the captured stderr
            proc.send_signal(signal.SIGUSR1)
            time.sleep(2)
            code = 'still running 60 s after SIGINT (its stacks: captured stderr)'
        finally:
            if proc.poll() is None: proc.kill(); proc.wait()   # never left running into a later test
            proc.stdout.close()
    assert code == 0
