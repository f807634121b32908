"""Secrets (issue 21.5): a key the kernel sends is never shown, saved or logged (a server that repeats it in a 401, a
reply that echoes it), and a secret inside a value (`cfg = {'api_key': ...}`, a dataclass's `password`, a key-shaped
string anywhere) never reaches the model through $`name`, `list_variables` or a tool argument, nor a reply's metadata.

Real servers on real sockets (the Ollama test server, which speaks the OpenAI protocol too), generated nested
containers for the detection, and one real kernel end to end.
"""

import dataclasses, json, logging
from collections import namedtuple
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from boopiter_ext import redact
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.core.refs import prompt_refs, summarize
from boopiter_ext.errors import ModelError, OllamaError
from boopiter_ext.models.ollama import OllamaClient
from boopiter_ext.models.openai_client import OpenAIClient
from boopiter_ext.models.stream import Reply, pump
from boopiter_ext.redact import SECRET, holds_secret, mask, masked, redacted, register, scrub, secret_values
from boopiter_ext.tools.guards import plan_calls
from boopiter_ext.tools.kernel import kernel_tools, tool_namespace

MODEL = 'qwen3:1.7b'
KEY = 'sk-live-' + 'Q7vR2x' * 5           # what the user's server answers 401 with, repeated in its body
SOME = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def known_keys():
    "The keys a test registers are forgotten after it: the registry is the process's."
    before = dict(redact._known)
    yield
    redact._known.clear(); redact._known.update(before)
    redact._order = sorted(redact._known, key=len, reverse=True)


def refusing(srv, key, status=401):
    "The next chat answers `status` with an OpenAI-style body that repeats `key`, as some gateways do."
    srv.script(fault='http_error', status=status,
               body={'error': {'message': f'Incorrect API key provided: {key}. Find yours at https://example.com.',
                               'type': 'invalid_request_error', 'key': key}})


# ---- a key the kernel sends is masked in every fault, reply, metadata and log line

def test_a_401_that_repeats_the_key_shows_only_its_last_four_characters(srv):
    refusing(srv, KEY)
    client = OpenAIClient(srv.url + '/v1', api_key=KEY)
    with pytest.raises(ModelError) as got: pump(client.chat(MODEL, [mk_msg('hi')]), Reply(MODEL))
    e = got.value
    said = str(e) + ''.join(e._render_traceback_()) + json.dumps(vars(e), default=str)
    assert 'HTTP 401' in said and KEY not in said and f'…{KEY[-4:]}' in said
    assert srv.requests[-1].headers.get('authorization') == f'Bearer {KEY}'   # it was sent, to the server it is for


def test_an_ollama_behind_a_proxy_that_repeats_the_key_is_masked_too(srv):
    key = 'proxy-token-' + '8f3a9c' * 4
    client = OllamaClient(srv.host)
    client.api_key = key
    srv.script(fault='http_error', status=401, body={'error': f'unauthorized: token {key} is not valid'})
    with pytest.raises(OllamaError) as got: pump(client.chat(MODEL, [mk_msg('hi')]), Reply(MODEL))
    assert key not in str(got.value) + str(getattr(got.value, 'body', '')) and key[-4:] in str(got.value)


def test_keys_from_the_router_and_the_environment_are_registered(monkeypatch):
    from boopiter_ext.models.router import Router
    monkeypatch.setenv('ANTHROPIC_API_KEY', 'sk-ant-api03-' + 'z' * 30)
    redact.register_environment()
    assert mask('bad: sk-ant-api03-' + 'z' * 30) == 'bad: …zzzz'
    monkeypatch.setenv('MY_GW_KEY', 'gw-' + '51' * 10)
    s = dict(api_key_env='MY_GW_KEY', api_base='http://gw/v1')
    class S(dict):
        project, source = None, dict(api_base='user file')
    assert Router.api_key(S(s)) == 'gw-' + '51' * 10 and mask('x gw-' + '51' * 10) == 'x …5151'


def test_a_reply_that_echoes_the_key_is_published_and_saved_masked():
    from boopiter_ext.faces.view import KernelView
    register(KEY)
    sent = []
    class Pub:
        def publish(self, data, md, transient=None, update=False): sent.append((data, md))
    shell = type('Shell', (), dict(display_pub=Pub()))()
    view = KernelView(shell, dict(note=f'server said {KEY}'), dict(items=[], tokens=1, window=4096, asked=f'why {KEY}?'))
    r = Reply(MODEL)
    r.add_content(f'Your header was `Authorization: Bearer {KEY}`.')
    view.update(r)
    r.finish('done')
    out = view.final(r)
    assert sent and KEY not in json.dumps(sent) and KEY not in json.dumps(out) and KEY[-4:] in json.dumps(out)


def test_log_lines_of_every_boopiter_logger_are_masked(caplog):
    register(KEY)
    log = logging.getLogger('boopiter_ext.models.somewhere')
    with caplog.at_level(logging.WARNING):
        log.warning('the server said %s', KEY)
        try: raise ValueError(f'bad {KEY}')
        except ValueError: log.exception('failed')
    text = '\n'.join(r.getMessage() + (r.exc_text or '') for r in caplog.records)
    assert 'the server said' in text and 'bad' in text and KEY not in text and KEY not in caplog.text


def test_masked_walks_a_bundle_and_leaves_other_values_alone():
    register(KEY)
    b = {'text/plain': KEY, 'm': [1, None, {'k': (KEY, 2.5)}], KEY: True}
    out = masked(b)
    assert KEY not in json.dumps(out) and out['m'][0] == 1 and out['m'][2]['k'][1] == 2.5
    assert mask(None) is None and mask('nothing here') == 'nothing here'


# ---- secrets inside values: by name at any depth, and by shape

@dataclasses.dataclass
class Db:
    host: str
    password: str

Creds = namedtuple('Creds', 'user token')

class Service:
    def __init__(self, url, secret): self.url, self.client_secret = url, secret


MARK = 'SEKRIT'
secrets_ = st.text('abcdefXYZ0123456789-_', min_size=0, max_size=20).map(lambda s: MARK + s)
secret_names = st.sampled_from(['api_key', 'API_KEY', 'token', 'access_token', 'db_password', 'Passwd', 'secret',
                                'client_secret', 'credentials', 'key'])
plain_names = st.sampled_from(['host', 'user', 'url', 'n', 'items', 'name', 'max_len'])
plain = st.one_of(st.integers(), st.text('abc xyz', max_size=8), st.none(), st.floats(allow_nan=False))


def holders(leaf):
    "A value holding `leaf` (a secret) under a secret's name, somewhere inside plain containers."
    def wrap(inner):
        return st.one_of(
            st.builds(lambda k, v, others: {**others, k: v}, plain_names, inner, st.dictionaries(plain_names, plain, max_size=3)),
            st.builds(lambda v, xs: [*xs, v], inner, st.lists(plain, max_size=3)),
            st.builds(lambda v: (1, v), inner),
            st.builds(lambda h, v: Db(h, 'x') if False else {'db': v, 'host': h}, st.text('abc', max_size=3), inner))
    held = st.one_of(
        st.builds(lambda k, s: {k: s}, secret_names, leaf),
        st.builds(lambda s: Db('db.local', s), leaf),
        st.builds(lambda s: Creds('ann', s), leaf),
        st.builds(lambda s: Service('https://api.example.com', s), leaf),
        st.builds(lambda k, s: {k: [s, {'nested': s}]}, secret_names, leaf))
    return st.recursive(held, wrap, max_leaves=6)


SHAPES = ['sk-' + 'A1b2' * 6, 'sk-proj-' + 'Ab3' * 50, 'sk-ant-api03-' + 'x9' * 12, 'ghp_' + 'Zy9' * 8, 'github_pat_' + '11AB' * 6,
          'xoxb-1234-5678-' + 'ab' * 6, 'AKIA' + 'ABCD1234EFGH5678', 'AIza' + 'Sy' + 'b' * 33, 'hf_' + 'q' * 30,
          'glpat-' + 'r' * 20, 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
          '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7b\n-----END RSA PRIVATE KEY-----',
          'api_key=9f8e7d6c5b4a39281706f5e4d3c2b1a0', 'token: "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5"']


def shown_everywhere(value)->str:
    "Everything the model could read of `value`: its summary ($`name`), its list_variables line, a prompt's references."
    ns = dict(cfg=value)
    list_variables, _ = kernel_tools(ns, lambda: [])
    refs = prompt_refs('Look at $`cfg`.', ns)
    return '\n'.join([summarize(value), list_variables(), list_variables('cfg'), refs.text])


@SOME
@given(holders(secrets_))
def test_a_secret_held_by_name_at_any_depth_never_reaches_the_model(value):
    shown = shown_everywhere(value)
    assert MARK not in shown and '`cfg` = ' in shown and 'cfg: ' in shown   # shown, without the secret
    assert holds_secret(value) and secret_values(value)
    calls, problem = plan_calls('lookup(cfg)', tool_namespace(dict(cfg=value)))
    assert calls == [] and 'holds a secret' in problem   # it cannot be handed to a tool either


@SOME
@given(st.sampled_from(SHAPES), plain_names, st.sampled_from(['bare', 'dict', 'list', 'text']))
def test_a_well_known_key_shape_anywhere_never_reaches_the_model(key, name, where):
    value = {'bare': key, 'dict': {name: key, 'count': 1}, 'list': ['x', key], 'text': f'config loaded: {key} (ok)'}[where]
    shown = shown_everywhere(value)
    secret = key.split('=')[-1].split(': ')[-1].strip('"').split('\n')[1 if 'BEGIN' in key else 0]
    assert not [secret[i:i + 12] for i in range(len(secret) - 11) if secret[i:i + 12] in shown]   # not even a piece
    assert SECRET in shown
    calls, problem = plan_calls('lookup(cfg)', tool_namespace(dict(cfg=value)))
    assert calls == [] and '`cfg` holds a secret' in problem


def test_values_that_only_look_alike_are_shown_as_they_are():
    value = dict(max_tokens=512, layout='qwerty', n=[1, 2], note='sk-short', sort='by key')
    assert summarize(value) == "dict, len 5: {'layout': 'qwerty', 'max_tokens': 512, 'n': [1, 2], 'note': 'sk-short', " \
                               "'sort': 'by key'}"   # a number under `max_tokens` is no secret
    assert redacted(value) is value and holds_secret(value) == ''   # nothing held by name: the value itself


def test_a_dataframe_column_named_like_a_secret_is_not_shown():
    pd = pytest.importorskip('pandas')
    df = pd.DataFrame(dict(user=['ann', 'bob'], api_token=[MARK + '1', MARK + '2']))
    shown = summarize(df)
    assert MARK not in shown and 'ann' in shown and SECRET in shown and 'api_token' in shown


def test_the_dry_run_and_the_question_kept_in_a_replys_metadata_hold_no_secret():
    from boopiter_ext.core.assistant import Assistant
    from boopiter_ext.render.reply import reply_bundle
    class Ran:
        done, current = [], None
        def cells(self): return []
    a = Assistant(Ran(), dict(cfg={'api_key': MARK + '-abc', 'host': 'db.local'}, total=3))
    try:
        p = a.preview('Is $`cfg` right for $`total`?', a.settings(dict(model='local/smollm2-135m')))
        r = Reply('m')
        r.add_content('ok')
        r.finish('done')
        data, md = reply_bundle(r, p['route'], p['ledger'])
        assert MARK not in json.dumps(p, default=str) + json.dumps(md) and 'db.local' in json.dumps(md)
    finally: a.close()


def test_scrub_leaves_ordinary_text_alone():
    text = 'The key idea: tokens are split; sk-learn is a library; token=short; password: see the docs.'
    assert scrub(text) == text


# ---- a real kernel

@pytest.mark.slow
def test_in_a_kernel_no_key_is_shown_saved_or_sent(srv, tmp_path):
    from kernels import KernelSession
    cfg_key = 'db-pass-' + '93kd' * 4
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'LAB_KEY': KEY}) as k:
        assert k.run('%load_ext boopiter_ext').status == 'ok'
        k.run(f"%config BoopMagics.api_base = '{srv.url}/v1'\n%config BoopMagics.api_key_env = 'LAB_KEY'")
        refusing(srv, KEY)
        res = k.run(f'%%prompt -m openai/{MODEL}\nhi')
        saved = json.dumps(res.outputs, ensure_ascii=False)
        assert 'HTTP 401' in saved and KEY not in saved and f'…{KEY[-4:]}' in saved   # the fault paragraph, masked
        k.run(f"cfg = {{'host': 'db.local', 'password': '{cfg_key}'}}")
        srv.script('It points at db.local.')
        res = k.run(f'%%prompt -m {MODEL}\nWhat does $`cfg` point at?')
        assert res.status == 'ok', res.outputs
        assert cfg_key not in json.dumps(srv.chats()[-1]) and 'db.local' in json.dumps(srv.chats()[-1])
        assert cfg_key not in json.dumps(res.outputs) and SECRET in json.dumps(res.outputs)   # the reply's metadata too
