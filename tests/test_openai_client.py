"""The OpenAI-compatible client (`openai/NAME` on `api_base`, the embedded model) against real servers over real sockets."""

import json, os, subprocess, sys, threading, time
from pathlib import Path
import pytest
from ollama_server import MID_STREAM_ERROR, RawReplyServer, free_port
from kernels import KernelSession
from boopiter_ext.errors import ModelError, ModelNotFound, ReplyBroken, ReplyStalled, SettingsError, Unreachable
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.models.router import Router
from boopiter_ext.models.openai_client import OpenAIClient
from boopiter_ext.render.reply import detail_rows, reply_metadata
from boopiter_ext.settings import load_settings
from boopiter_ext.models.stream import Reply, pump

MODEL = 'qwen3:1.7b'
MSGS = [mk_msg('be brief', 'system'), mk_msg('hi')]
ROOT = Path(__file__).parent.parent


def ask(client, model=MODEL, **kw):
    r = pump(client.chat(model, MSGS, **kw), Reply(model))
    r.finish('done')
    return r


def wait_for(cond, timeout=3.0):
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline: time.sleep(0.02)
    return cond()


@pytest.fixture
def client(srv):
    with OpenAIClient(srv.url + '/v1', api_key='none', timeout=30) as c: yield c


def test_streams_the_exact_reply_reasoning_and_usage(srv, client):
    srv.script('  Two\n\nlines.  ', thinking='think first ')
    r = ask(client, max_tokens=64, think='h', seed=7)
    assert r.answer == '  Two\n\nlines.  ' and r.reasoning == 'think first '
    assert r.info['finish_reason'] == 'stop' and r.info['completion_tokens'] == 4 and r.info['prompt_tokens'] > 0
    assert r.info['reasoning_tokens'] == 2                     # from usage.completion_tokens_details
    body = srv.last_chat()
    assert body['model'] == MODEL and body['stream'] is True and body['max_tokens'] == 64 and body['seed'] == 7
    assert body['stream_options'] == {'include_usage': True} and body['reasoning_effort'] == 'high'
    assert body['messages'] == [{'role': 'system', 'content': 'be brief'}, {'role': 'user', 'content': 'hi'}]


def test_nothing_optional_is_sent_unless_set(srv, client):
    ask(client, think='off')
    assert not {'max_tokens', 'reasoning_effort', 'seed'} & set(srv.last_chat())


def test_images_go_as_openai_image_url_objects(srv, client):
    pump(client.chat(MODEL, [mk_msg(['what is this', b'\x89PNG\r\n\x1a\n0000'])]), Reply(MODEL))
    [text, img] = srv.last_chat()['messages'][0]['content']
    assert text == {'type': 'text', 'text': 'what is this'}
    assert img == {'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,iVBORw0KGgowMDAw'}}


def test_the_key_travels_only_as_a_bearer_header(srv):
    c = OpenAIClient(srv.url + '/v1', api_key='k-secret-123')
    srv.script('ok')
    ask(c)
    assert srv.requests[-1].headers['authorization'] == 'Bearer k-secret-123'
    assert 'k-secret' not in repr(c) and 'k-secret' not in str(vars(c).get('where'))
    srv.script(fault='http_error', status=401, body={'error': {'message': 'bad key'}})
    with pytest.raises(ModelError) as e: ask(c)
    assert 'bad key' in str(e.value) and 'api_key_env' in str(e.value) and 'k-secret' not in str(e.value)
    ask(OpenAIClient(srv.url + '/v1'))
    assert 'authorization' not in srv.requests[-1].headers


def test_one_http_session_serves_every_call(srv, client):
    for _ in range(3): ask(client)
    assert len(srv.chats()) == 3 and len({r.client for r in srv.requests}) == 1   # one keep-alive connection


def test_unreachable_says_where_and_what_to_check():
    c = OpenAIClient(f'http://user:pw@127.0.0.1:{free_port()}/v1')
    with pytest.raises(Unreachable) as e: ask(c)
    msg = str(e.value)
    assert 'Connection refused' in msg and 'api_base' in msg and 'pw' not in msg and '\n' not in msg


def test_unknown_model_lists_what_the_server_has(srv, client):
    with pytest.raises(ModelNotFound) as e: ask(client, 'nosuch:1b')
    assert "'nosuch:1b'" in str(e.value) and 'qwen3:1.7b' in str(e.value) and e.value.status == 404


def test_http_error_body_is_relayed_once(srv, client):
    srv.script(fault='http_error', status=500, body={'error': {'message': 'GPU on fire'}})
    with pytest.raises(ModelError, match='HTTP 500: GPU on fire'): ask(client)
    assert len(srv.chats()) == 1


def test_drop_mid_reply_keeps_the_partial_text(srv, client):
    srv.script('alpha beta gamma delta', fault='drop', after=2)
    r = Reply(MODEL)
    with pytest.raises(ReplyBroken): pump(client.chat(MODEL, MSGS), r)
    assert r.answer == 'alpha beta '


def test_mid_stream_error_and_garbage_events(srv, client):
    srv.script('a b c', fault='error_line', after=1)
    with pytest.raises(ModelError, match=MID_STREAM_ERROR): ask(client)
    srv.script('a b c', fault='malformed', after=1)
    with pytest.raises(ModelError, match='not a JSON object'): ask(client)


def test_silence_times_out_and_hangs_up(srv):
    srv.script('one two', fault='stall', after=1)
    c, r, t = OpenAIClient(srv.url + '/v1', timeout=0.5), Reply(MODEL), time.monotonic()
    with pytest.raises(ReplyStalled, match='timeout'): pump(c.chat(MODEL, MSGS), r)
    assert 0.4 < time.monotonic() - t < 3 and r.answer == 'one '
    assert wait_for(lambda: srv.streams[-1].disconnected)


def test_stopping_early_closes_the_connection(srv, client):
    "An interrupt closes the generator, which closes the HTTP response: the server sees the hang-up."
    srv.script('x ' * 300, delay=0.01)
    gen = client.chat(MODEL, MSGS)
    assert next(gen) == ('content', 'x ')
    gen.close()
    assert wait_for(lambda: srv.streams[-1].disconnected) and srv.streams[-1].pieces < 300
    assert wait_for(lambda: not [t for t in threading.enumerate() if t.name == 'boopiter-stall-watch'])


def test_lists_models(srv, client):
    assert client.models() == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']
    with pytest.raises(Unreachable): OpenAIClient(f'http://127.0.0.1:{free_port()}/v1').models()
    with pytest.raises(ModelError, match='model list'): OpenAIClient(srv.url).models()   # no /v1: a 404 page


# The event-stream reader, fed raw bytes by a server of our own

@pytest.fixture
def raw_server():
    with RawReplyServer() as raw: yield raw


def sse(*objs, done=True, nl=b'\n'):
    return b''.join(b'data: ' + (o if isinstance(o, bytes) else json.dumps(o).encode()) + nl + nl for o in objs) + (
        b'data: [DONE]' + nl + nl if done else b'')


def delta(**d): return {'choices': [{'index': 0, 'delta': d, 'finish_reason': None}]}


@pytest.mark.parametrize('nl,split', [(b'\n', 1 << 16), (b'\r\n', 1 << 16), (b'\r\n', 3), (b'\n', 1)])
def test_reads_any_line_ending_and_any_chunking(raw_server, nl, split):
    usage = {'choices': [], 'usage': {'prompt_tokens': 5, 'completion_tokens': 3}}
    raw_server.raw, raw_server.split = sse(delta(reasoning_content='hm'), delta(content='Hé'), delta(content='llo 🙂'),
                                           {'choices': [{'delta': {}, 'finish_reason': 'length'}]}, usage, nl=nl), split
    r = ask(OpenAIClient(raw_server.url + '/v1'))
    assert (r.answer, r.reasoning) == ('Héllo 🙂', 'hm')
    assert r.info == dict(finish_reason='length', prompt_tokens=5, completion_tokens=3)


def test_values_of_the_wrong_kind_never_reach_the_reply(raw_server):
    "A server's odd values (numbers for text, lists for objects) are skipped, not passed on to break the page."
    raw_server.raw, raw_server.split = sse(delta(content=5), delta(content=['x']), {'choices': 'no'}, {'choices': [3]},
                                           delta(content='ok', reasoning=7), {'usage': {'prompt_tokens': 'many'}},
                                           {'choices': [{'delta': 'x', 'finish_reason': 'stop'}]}), 1 << 16
    r = ask(OpenAIClient(raw_server.url + '/v1'))
    assert r.answer == 'ok' and r.reasoning == '' and r.info == dict(finish_reason='stop')
    raw_server.raw = sse(b'[1, 2]')
    with pytest.raises(ModelError, match='not a JSON object'): ask(OpenAIClient(raw_server.url + '/v1'))


def test_the_servers_cache_numbers_reach_the_reply(raw_server):
    "llama.cpp's last event: `usage.prompt_tokens_details.cached_tokens` and `timings` (what it reused and processed)."
    last = {'choices': [], 'usage': {'prompt_tokens': 55, 'completion_tokens': 11, 'total_tokens': 66,
                                     'prompt_tokens_details': {'cached_tokens': 40}},
            'timings': {'cache_n': 40, 'prompt_n': 15, 'prompt_ms': 99.6734, 'prompt_per_second': 150.5,
                        'predicted_n': 11, 'predicted_ms': 225.7}}
    raw_server.raw = sse(delta(content='ok'), {'choices': [{'delta': {}, 'finish_reason': 'stop'}]}, last)
    r = ask(OpenAIClient(raw_server.url + '/v1'))
    assert r.info == dict(finish_reason='stop', prompt_tokens=55, completion_tokens=11, cached_tokens=40,
                          evaluated_tokens=15, prompt_ms=99.673)
    md = reply_metadata(r)['boopiter']   # kept with the reply, and said in its details
    assert (md['prompt_tokens'], md['cached_tokens'], md['evaluated_tokens'], md['prompt_ms']) == (55, 40, 15, 99.673)
    assert "Tokens: 55 prompt (40 from the server's cache) + 11 completion" in detail_rows(r)
    only_usage = {'choices': [], 'usage': {'prompt_tokens': 9, 'prompt_tokens_details': {'cached_tokens': 0}}}  # vLLM
    raw_server.raw = sse(delta(content='ok'), {'choices': [{'delta': {}, 'finish_reason': 'stop'}]}, only_usage)
    assert ask(OpenAIClient(raw_server.url + '/v1')).info == dict(finish_reason='stop', prompt_tokens=9, cached_tokens=0)


def test_odd_cache_numbers_are_dropped(raw_server):
    "Untrusted numbers: strings, booleans, negatives, floats for counts, NaN-like or huge timings never get through."
    odd = {'choices': [], 'usage': {'prompt_tokens': True, 'prompt_tokens_details': {'cached_tokens': '40'}},
           'timings': {'cache_n': -1, 'prompt_n': 2.5, 'prompt_ms': 'slow'}}
    raw_server.raw = sse(delta(content='ok'), {'choices': [{'delta': {}, 'finish_reason': 'stop'}]}, odd,
                         {'choices': [], 'usage': {'prompt_tokens_details': [1]}, 'timings': {'prompt_ms': 1e300}},
                         {'choices': [], 'timings': ['x']})
    assert ask(OpenAIClient(raw_server.url + '/v1')).info == dict(finish_reason='stop')


def test_events_join_data_lines_and_skip_comments_and_other_fields(raw_server):
    raw_server.raw, raw_server.split = (b': keep-alive\n\nevent: chunk\nid: 1\ndata: {"choices": [{"delta":\n'
                                        b'data:{"content": "two lines"}}]}\n\n\n\nretry: 5\ndata: {"choices": [{"delta": {},'
                                        b' "finish_reason": "stop"}]}\n\ndata: [DONE]'), 7   # no blank line at the end
    r = ask(OpenAIClient(raw_server.url + '/v1'))
    assert r.answer == 'two lines' and r.info == dict(finish_reason='stop')


def test_an_endless_error_body_is_read_only_in_part(raw_server):
    raw_server.raw, raw_server.status = b'{"error": "' + b'x' * (8 << 20) + b'"}', 500
    raw_server.content_type = 'application/json'
    t = time.monotonic()
    with pytest.raises(ModelError, match='HTTP 500') as e: ask(OpenAIClient(raw_server.url + '/v1'))
    assert len(str(e.value)) < 1200 and time.monotonic() - t < 5


def test_a_stream_that_just_ends_is_broken(raw_server):
    raw_server.raw, raw_server.split = sse(delta(content='half'), done=False), 1 << 16
    r = Reply(MODEL)
    with pytest.raises(ReplyBroken, match='ended before'): pump(OpenAIClient(raw_server.url + '/v1')
                                                                .chat(MODEL, MSGS), r)
    assert r.answer == 'half'


# Through the router

def test_router_sends_openai_ids_on_api_base_here_and_the_key_it_decides(srv, monkeypatch):
    monkeypatch.setenv('OPENAI_API_KEY', 'sk-real-secret')
    router = Router()
    def auth(**config):
        s = load_settings(config=dict(api_base=srv.url + '/v1', **config))
        srv.script('routed')
        assert pump(router.chat('openai/' + MODEL, MSGS, s), Reply(MODEL)).answer == 'routed'
        assert router.describe('openai/' + MODEL, s) == dict(name='OpenAI-compatible', endpoint=srv.url + '/v1')
        return srv.requests[-1].headers.get('authorization')
    assert auth() is None                                         # never your OpenAI key to a server of yours
    monkeypatch.setenv('MY_SERVER_KEY', 'k-123')
    assert auth(api_key_env='MY_SERVER_KEY') == 'Bearer k-123'
    with pytest.raises(SettingsError, match='NOT_SET'): auth(api_key_env='NOT_SET')
    assert list(router._openai) == [srv.url + '/v1'] and router._litellm is None
    router.close()


def test_this_route_never_imports_litellm(srv):
    srv.script('no litellm here')
    code = ('import sys\nfrom boopiter_ext.models.router import Router\nfrom boopiter_ext.settings import load_settings\n'
            'from boopiter_ext.context.messages import mk_msg\n'
            f's = load_settings(config=dict(api_base={srv.url + "/v1"!r}))\n'
            f'print("".join(v for k,v in Router().chat("openai/{MODEL}", [mk_msg("hi")], s) if k == "content"))\n'
            'print("litellm" in sys.modules, "openai" in sys.modules)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.split('\n')[:2] == ['no litellm here', 'False False'], out.stderr


@pytest.mark.slow
def test_prompt_cell_on_an_openai_compatible_server(srv, tmp_path):
    srv.script('Through **SSE**.')
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        assert k.run('%load_ext boopiter_ext').status == 'ok'
        k.run(f'%config BoopMagics.api_base = "{srv.url}/v1"')
        res = k.run(f'%%prompt -m openai/{MODEL}\nhello')
        assert res.status == 'ok', res.outputs
        assert res.reply['data']['text/plain'] == 'Through **SSE**.'
        md = res.reply['metadata']['boopiter']
        assert (md['route'], md['model'], md['endpoint']) == ('OpenAI-compatible', f'openai/{MODEL}', f'{srv.url}/v1')
        assert srv.last_chat()['messages'][-1]['content'] == 'hello' and 'api_key' not in str(res.reply)


def test_a_kept_alive_connection_the_server_closed_is_asked_again_once(tmp_path):
    "llama.cpp closes a connection after each streamed reply while announcing keep-alive: the next request goes again."
    import socket, threading
    from boopiter_ext.models.openai_client import OpenAIClient
    event = b'data: {"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'
    answer = (b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n' % len(event)) + event
    srv, seen = socket.socket(), []
    srv.bind(('127.0.0.1', 0)); srv.listen()
    def serve():
        for n in range(3):
            c, _ = srv.accept()
            c.recv(65536)
            seen.append(n)
            if n != 1: c.sendall(answer)   # the second request's connection closes unanswered, twice over for the third
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    client = OpenAIClient(f'http://127.0.0.1:{srv.getsockname()[1]}/v1', timeout=10)
    try:
        assert [e for e in client.chat('m', [dict(role='user', content='x')]) if e[0] == 'content'] == [('content', 'hi')]
        assert [e for e in client.chat('m', [dict(role='user', content='y')]) if e[0] == 'content'] == [('content', 'hi')]
        assert seen == [0, 1, 2]   # the dropped one was sent again, once
    finally:
        client.close(); srv.close()
