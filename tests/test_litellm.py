"""The litellm client against the test server's OpenAI-compatible endpoints: cloud ids (here pointed at the test
server through `OPENAI_BASE_URL`, as litellm reads it) and other providers' ids on an `api_base`."""

import time
import pytest
from ollama_server import free_port
from kernels import KernelSession
from boopiter_ext.errors import ModelError, ModelNotFound, ReplyBroken, ReplyStalled, Unreachable
from boopiter_ext.models.litellm_client import LitellmClient
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.models.stream import Reply, pump

MODEL = 'openai/qwen3:1.7b'
MSGS = [mk_msg('be brief', 'system'), mk_msg('hi')]


def ask(srv, model=MODEL, **kw):
    kw = dict(api_base=srv.url + '/v1', api_key='none') | kw
    r = pump(LitellmClient().chat(model, MSGS, **kw), Reply(model))
    r.finish('done')
    return r


@pytest.mark.heavy
def test_streams_the_exact_reply_reasoning_and_usage(srv):
    srv.script('  Two\n\nlines.  ', thinking='think first ')
    r = ask(srv, max_tokens=64, seed=7)
    assert r.answer == '  Two\n\nlines.  ' and r.reasoning == 'think first '
    assert r.info['finish_reason'] == 'stop' and r.info['completion_tokens'] > 0
    body = srv.last_chat()
    assert body['model'] == 'qwen3:1.7b' and body['max_tokens'] == 64 and body['seed'] == 7
    assert body['stream_options'] == {'include_usage': True} and body['messages'][0]['content'] == 'be brief'


def test_a_seed_goes_only_to_the_providers_that_take_one(srv):
    "litellm refuses a parameter a provider has not (Anthropic's API has no seed): it is left out, not refused."
    from boopiter_ext.models.litellm_client import _takes, import_litellm
    litellm = import_litellm()
    assert _takes(litellm, 'openai/gpt-4o-mini', 'seed') and _takes(litellm, 'gemini/gemini-2.5-flash', 'seed')
    assert not _takes(litellm, 'anthropic/claude-sonnet-4-5', 'seed') and not _takes(litellm, 'no-such/x', 'seed')


def test_unreachable_endpoint():
    with pytest.raises(Unreachable) as e: ask(type('S', (), {'url': f'http://127.0.0.1:{free_port()}'}))
    assert 'api_base' in str(e.value)


def test_http_error_body_is_relayed_once_no_retries(srv):
    srv.script(fault='http_error', status=500, body={'error': {'message': 'GPU on fire'}})
    with pytest.raises(ModelError, match='GPU on fire'): ask(srv)
    assert len(srv.chats()) == 1


def test_unknown_model(srv):
    with pytest.raises(ModelNotFound): ask(srv, 'openai/nosuch')


def test_drop_mid_reply_keeps_the_partial_text(srv):
    srv.script('alpha beta gamma delta', fault='drop', after=2)
    r = Reply(MODEL)
    with pytest.raises(ReplyBroken):
        pump(LitellmClient().chat(MODEL, MSGS, api_base=srv.url + '/v1', api_key='none'), r)
    assert r.answer == 'alpha beta '


def test_stall_times_out_and_hangs_up(srv):
    srv.script('one two', fault='stall', after=1)
    t = time.monotonic()
    with pytest.raises(ReplyStalled): ask(srv, timeout=0.5)
    assert time.monotonic() - t < 5
    deadline = time.monotonic() + 3
    while not srv.streams[-1].disconnected and time.monotonic() < deadline: time.sleep(0.02)
    assert srv.streams[-1].disconnected


def test_stopping_early_closes_the_connection(srv):
    srv.script('x ' * 300, delay=0.01)
    gen = LitellmClient().chat(MODEL, MSGS, api_base=srv.url + '/v1', api_key='none')
    assert next(gen) == ('content', 'x ')
    gen.close()
    deadline = time.monotonic() + 3
    while not srv.streams[-1].disconnected and time.monotonic() < deadline: time.sleep(0.02)
    assert srv.streams[-1].disconnected and srv.streams[-1].pieces < 300


@pytest.mark.slow
def test_prompt_cell_on_the_litellm_route(srv, tmp_path):
    "A cloud id (no `api_base`) goes through litellm, with the key litellm reads from the environment."
    env = dict(OLLAMA_HOST=srv.host, OPENAI_BASE_URL=srv.url + '/v1', OPENAI_API_KEY='sk-cloud-key')
    with KernelSession(tmp_path, env=env) as k:
        assert k.run('%load_ext boopiter_ext').status == 'ok'
        srv.script('Through **litellm**.')
        res = k.run(f'%%prompt -m {MODEL}\nhello')
    assert res.status == 'ok', res.outputs
    assert res.reply['data']['text/plain'] == 'Through **litellm**.'
    md = res.reply['metadata']['boopiter']
    assert md['route'] == 'litellm' and md['model'] == MODEL and md['endpoint'] == ''
    assert srv.last_chat()['messages'][-1]['content'] == 'hello'
    assert srv.requests[-1].headers['authorization'] == 'Bearer sk-cloud-key' and 'sk-cloud' not in str(res.outputs)


def test_another_providers_id_on_a_custom_api_base_never_gets_your_environment_key(srv, monkeypatch):
    "`hosted_vllm/NAME` on `api_base` still goes through litellm, with the key `Router.api_key` decides."
    from boopiter_ext.errors import SettingsError
    from boopiter_ext.models.router import Router
    from boopiter_ext.settings import load_settings
    monkeypatch.setenv('OPENAI_API_KEY', 'sk-real-secret')
    def auth(**config):
        s = load_settings(config=dict(api_base=srv.url + '/v1', **config))
        srv.script('via litellm')
        router = Router()
        assert pump(router.chat('hosted_vllm/qwen3:1.7b', MSGS, s), Reply(MODEL)).answer == 'via litellm'
        assert router._litellm is not None and not router._openai
        return [r.headers.get('authorization') for r in srv.requests if r.path.startswith('/v1/chat')][-1]
    assert auth() == 'Bearer none'
    monkeypatch.setenv('MY_SERVER_KEY', 'k-123')
    assert auth(api_key_env='MY_SERVER_KEY') == 'Bearer k-123'
    with pytest.raises(SettingsError, match='NOT_SET'): auth(api_key_env='NOT_SET')


def test_a_structured_answer_on_the_litellm_route_sends_response_format(srv, monkeypatch, tmp_path):
    "`ask(schema=...)` on a litellm id: OpenAI's `response_format`, which litellm passes on (or maps per provider)."
    import dataclasses
    from boopiter_ext.core.assistant import Assistant
    from boopiter_ext.core.asking import Question

    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    class NoCells:
        current = None
        def cells(self): return []
    monkeypatch.chdir(tmp_path)
    (tmp_path/'settings.ini').write_text(f'[boopiter]\nhost = 127.0.0.1:{free_port()}\n')
    monkeypatch.setenv('OPENAI_BASE_URL', srv.url + '/v1')   # a cloud id, pointed at the test server as litellm reads it
    monkeypatch.setenv('OPENAI_API_KEY', 'sk-test-not-a-key')
    srv.script('{"x": 1, "y": 2}')
    a = Assistant(NoCells(), {})
    try: assert Question.of(a, MODEL, schema=Point).answer('Where?')[0] == Point(1, 2)   # no api_base: litellm's
    finally: a.close()
    rf = srv.last_chat()['response_format']
    assert rf['type'] == 'json_schema' and rf['json_schema']['strict'] is True   # closed and all required: strict
    assert rf['json_schema']['schema']['required'] == ['x', 'y']
