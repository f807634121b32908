"""A model listed by a source is answered by that source, whatever its name (issue 21, section 6).

Four real servers, one per source kind: the default Ollama host, the OpenAI-compatible server at `api_base`, a named
Ollama endpoint and a named OpenAI-compatible one, each with its own key. For generated model names (every route's
prefix, `/`, `@`, `:`), each server lists the name; the id its catalog entry carries, the automatic choice and a saved
binding naming that id must reach that server with that exact name and that server's key: no other server hears of
it, and no other client (litellm least of all) is built."""

import os
from contextlib import contextmanager
import pytest
from hypothesis import HealthCheck, example, given, settings as hsettings, strategies as st
from ollama_server import CHAT_PATHS, OllamaTestServer, normalize_model
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.core.binding import may_choose, screen_binding
from boopiter_ext.models.catalog import Listing, ModelEntry, endpoint_source, named_source, ollama_source
from boopiter_ext.models.router import Router
from boopiter_ext.models.routes import is_ollama_id, ollama_id, ollama_name, route_name
from boopiter_ext.models.stream import Reply, pump
from boopiter_ext.settings import check_setting, load_settings

KEYS = dict(MINE_KEY='k-api-base', GPU_KEY='k-gpu1', VLLM_KEY='k-vllm', OPENAI_API_KEY='sk-cloud-never-sent')
PREFIXES = ['', 'openai/', 'local/', 'deaddrop/', 'ollama_chat/', 'ollama/', 'hf.co/', '@gpu1/', '@vllm/', '@', 'anthropic/',
            'gemini/', 'ollama_chat/ollama_chat/', 'openai/@gpu1/', 'user/']
names = st.builds(str.__add__, st.sampled_from(PREFIXES), st.text('abqwen3-_.:/@7', min_size=1, max_size=24))


@pytest.fixture(scope='module')
def servers():
    "One real server per source kind: the default Ollama host, `api_base`, the Ollama endpoint gpu1, the OpenAI one vllm."
    with OllamaTestServer([]) as host, OllamaTestServer([]) as base, OllamaTestServer([]) as gpu, OllamaTestServer([]) as vllm:
        yield dict(host=host, base=base, gpu1=gpu, vllm=vllm)


@pytest.fixture(scope='module')
def config(servers, tmp_path_factory):
    "Your own settings.ini naming the three other servers, each with its key variable."
    xdg = tmp_path_factory.mktemp('routing')
    (xdg/'boopiter').mkdir()
    (xdg/'boopiter'/'settings.ini').write_text(
        f'[boopiter]\napi_base = {servers["base"].url}/v1\napi_key_env = MINE_KEY\n'
        f'[boopiter.endpoint.gpu1]\nkind = ollama\nurl = {servers["gpu1"].host}\napi_key_env = GPU_KEY\n'
        f'[boopiter.endpoint.vllm]\nkind = openai\nurl = {servers["vllm"].url}/v1\napi_key_env = VLLM_KEY\n')
    return dict(XDG_CONFIG_HOME=str(xdg), OLLAMA_HOST=servers['host'].host), xdg


@contextmanager
def keys():
    "Every source's key in the environment, the cloud's too: only the listing source's may be sent."
    old = {k: os.environ.get(k) for k in KEYS}
    os.environ.update(KEYS)
    try: yield
    finally:
        for k,v in old.items():
            if v is None: os.environ.pop(k, None)
            else: os.environ[k] = v


def chats(servers)->list:
    "(server's name, path, model asked, Authorization header) of every chat request any server received."
    return [(n, r.path, (r.json or {}).get('model'), r.headers.get('authorization')) for n,s in servers.items()
            for r in s.requests if r.path.split('?')[0] in CHAT_PATHS]


def answered(model, settings, servers)->tuple:
    "Ask `model` through a fresh router; (chat requests seen, litellm built, OpenAI-compatible servers it made clients for)."
    for s in servers.values(): s.reset()
    router = Router()
    try:
        reply = pump(router.chat(model, [mk_msg('hi')], settings), Reply(model))
        assert reply.answer == 'Hello from the test server.'
        return chats(servers), router._litellm is not None, set(router._openai), [k for k in router._ollama]
    finally: router.close()


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names)
@example('openai/gpt-4o-mini')   # the case: Ollama's model of that name went to OpenAI with OPENAI_API_KEY
@example('local/smollm2-135m')
@example('deaddrop/claude')
@example('@gpu1/x')
@pytest.mark.heavy
def test_a_listed_model_is_answered_by_the_source_that_listed_it_whatever_its_name(servers, config, name):
    environ, _ = config
    for s in servers.values():
        s.models = [normalize_model(dict(name=name, capabilities=['completion', 'tools']))]
        s.reset()
    settings = load_settings(environ=environ, start=config[1])
    with keys():
        lister = Router()
        try:
            listed = dict(host=ollama_source(lister, settings), base=endpoint_source(lister, settings),
                          gpu1=named_source(lister, settings, settings.endpoints['gpu1']),
                          vllm=named_source(lister, settings, settings.endpoints['vllm']))
            auto = lister.auto_model(settings)[0]
        finally: lister.close()
        assert all(len(entries) == 1 for entries in listed.values()), listed
        ids = {src: entries[0].id for src,entries in listed.items()}
        assert auto == ids['host'] and len(set(ids.values())) == 4   # four sources, four different ids
        expect = dict(host=('/api/chat', None), base=('/v1/chat/completions', 'Bearer k-api-base'),
                      gpu1=('/api/chat', 'Bearer k-gpu1'), vllm=('/v1/chat/completions', 'Bearer k-vllm'))
        for src, mid in ids.items():
            if not check_setting('model', mid): continue   # not an id a binding or `-m` takes (too long): listing only
            kept, refused = screen_binding(dict(model=mid), settings)   # the menu's pick, saved and read back
            assert kept == dict(model=mid) and not refused and may_choose(mid, settings)
            bound = load_settings(binding=kept, environ=environ, start=config[1])
            for model in dict.fromkeys([mid, resolved(bound)]):
                seen, litellm, openai, ollama = answered(model, bound, servers)
                path, key = expect[src]
                assert seen == [(src, path, name, key)], (src, mid, seen)   # that server, that name, that key; no other
                assert not litellm and all(KEYS['OPENAI_API_KEY'] not in str(h) for *_, h in seen)
                assert len(openai) + len(ollama) == 1   # one client built: the listing source's


def resolved(settings)->str:
    "Who answers a prompt under `settings` (`Router.resolve`): with a binding, the model it names."
    router = Router()
    try: return router.resolve(settings)[0]
    finally: router.close()


@hsettings(max_examples=500, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_an_ollama_name_becomes_an_id_whose_shape_says_ollama_and_gives_the_name_back(name):
    mid = ollama_id(name)
    assert route_name(mid) == 'ollama' and is_ollama_id(mid) and ollama_name(mid) == name
    assert mid == name or mid == 'ollama_chat/' + name


def test_a_listing_finds_ollamas_model_by_any_spelling_but_never_another_sources_of_the_same_name():
    listing = Listing([ModelEntry('ollama_chat/openai/x:latest', 'openai/x:latest', 'ollama'),
                       ModelEntry('openai/x', 'x', 'endpoint'), ModelEntry('qwen3:latest', 'qwen3:latest', 'ollama'),
                       ModelEntry('@g/ollama_chat/y:1', 'ollama_chat/y:1 @g', 'ollama')])
    assert listing.get('openai/x').source == 'endpoint'
    assert listing.get('ollama_chat/openai/x').id == 'ollama_chat/openai/x:latest'
    assert listing.get('qwen3').id == listing.get('ollama_chat/qwen3').id == 'qwen3:latest'
    assert listing.get('@g/ollama_chat/y:1').id == '@g/ollama_chat/y:1' and listing.get('@g/y:1') is None
    assert listing.get('anthropic/x') is None and listing.get('') is None


def test_a_saved_binding_naming_a_bare_openai_id_is_read_by_its_shape_and_says_what_ollamas_is(tmp_path):
    settings = load_settings(environ={}, start=tmp_path)   # no api_base: `openai/x` would be OpenAI itself
    kept, refused = screen_binding(dict(model='openai/gpt-4o-mini'), settings)
    assert kept == {} and '`ollama_chat/openai/gpt-4o-mini`' in refused[0] and '\n' not in refused[0]
    assert screen_binding(dict(model='ollama_chat/openai/gpt-4o-mini'), settings) == \
        (dict(model='ollama_chat/openai/gpt-4o-mini'), [])
