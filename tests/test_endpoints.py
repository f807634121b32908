"""Named endpoints (issue 16): many model servers in the settings files, `@NAME/MODEL` ids, keys per endpoint, the
system-wide file, a catalog that never waits for a dead server, and shared-server etiquette. Real servers, real sockets."""

import copy, itertools, time
import pytest
from hypothesis import given, settings as hsettings, strategies as st
from ollama_server import OllamaTestServer, Silent, free_port
from boopiter_ext.core.binding import may_choose, screen_binding
from boopiter_ext.models.catalog import Catalog
from boopiter_ext.errors import SettingsError, Unreachable
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.models.router import Router
from boopiter_ext.models.ollama import OllamaClient, sync_ollama_loaded, unload_ollama_model
from boopiter_ext.models.routes import endpoint_id, endpoint_of, is_ollama_id, route_kind, route_name, split_endpoint
from boopiter_ext.settings import ENDPOINT_NAME, MAX_ENDPOINTS, Endpoint, load_settings, read_endpoints, system_ini
from boopiter_ext.models.stream import Reply, pump
from strategies import awkward_text

MSGS = [mk_msg('hi')]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding='utf-8')
    return path


def section(name, kind, url, **more):
    return f'[boopiter.endpoint.{name}]\nkind = {kind}\nurl = {url}\n' + ''.join(f'{k} = {v}\n' for k,v in more.items())


def files(tmp_path, system='', user='', project=''):
    "Settings from the three files (each given as its text, '' for none), read as a kernel in `proj` reads them."
    env = {'XDG_CONFIG_HOME': str(tmp_path/'xdg'), 'BOOPITER_SYSTEM_SETTINGS': str(tmp_path/'etc'/'settings.ini')}
    for path, text in ((tmp_path/'etc'/'settings.ini', system), (tmp_path/'xdg'/'boopiter'/'settings.ini', user),
                       (tmp_path/'proj'/'settings.ini', project)):
        if text: write(path, text)
    (tmp_path/'proj').mkdir(parents=True, exist_ok=True)
    return load_settings(start=tmp_path/'proj', environ=env)


def ask(router, model, settings):
    reply = pump(router.chat(model, MSGS, settings), Reply(model))
    reply.finish('done')
    return reply


# -- settings: sections, one line per bad value, which file wins

def test_endpoints_are_sections_of_the_settings_files_checked_where_they_are_read(tmp_path):
    s = files(tmp_path, user='[boopiter]\nmodel = @gpu1/qwen3:8b\n'
                            + section('gpu1', 'ollama', 'gpu1.lab:11434', api_key_env='LAB_KEY')
                            + section('vllm', 'openai', 'http://10.0.0.5:8000/v1/')
                            + section('typo', 'olama', 'http://x:1') + section('nourl', 'openai', 'gpu2:8000')
                            + '[boopiter.endpoint.bad name]\nkind = ollama\nurl = x:1\n'
                            + '[boopiter.endpoint.k]\nkind = openai\nurl = http://k/v1\napi_key = sk-secret\nshared = maybe\n')
    assert list(s.endpoints) == ['gpu1', 'vllm', 'k'] and s['model'] == '@gpu1/qwen3:8b'
    gpu1, vllm = s.endpoints['gpu1'], s.endpoints['vllm']
    assert (gpu1.kind, gpu1.base, gpu1.api_key_env, gpu1.shared) == ('ollama', 'http://gpu1.lab:11434', 'LAB_KEY', False)
    assert (vllm.kind, vllm.base) == ('openai', 'http://10.0.0.5:8000/v1')
    said = '\n'.join(s.warnings)
    assert all('\n' not in w for w in s.warnings) and len(s.warnings) == 5
    assert '[boopiter.endpoint.typo]: `kind = olama` is not ollama or openai; the endpoint is ignored' in said
    assert '[boopiter.endpoint.nourl]: `url = gpu2:8000` is not an http(s) URL; the endpoint is ignored' in said
    assert 'section `[boopiter.endpoint.bad name]` ignored: an endpoint name is' in said
    assert '`api_key` ignored: API keys come from the environment only' in said and 'sk-secret' not in said
    assert '`shared = maybe` is not on or off; ignored' in said


def test_a_name_is_defined_whole_by_the_highest_file_and_the_system_files_are_shared(tmp_path):
    s = files(tmp_path, system='[boopiter]\nhost = hub-ollama:11434\ntimeout = 60\n'
                               + section('lab', 'ollama', 'http://lab:11434') + section('gw', 'openai', 'http://gw/v1')
                               + section('scratch', 'ollama', 'http://scratch:11434', shared='off'),
              user='[boopiter]\ntimeout = 90\n' + section('gw', 'openai', 'http://my-gw/v1', api_key_env='MY_GW'),
              project=section('lab', 'openai', 'http://their-lab/v1'))
    assert s['timeout'] == 90 and s['host'] == 'hub-ollama:11434' and s.source['host'] == s.system
    eps = s.endpoints
    assert [(n, e.kind, e.url, e.shared) for n,e in eps.items()] == [
        ('lab', 'openai', 'http://their-lab/v1', False), ('gw', 'openai', 'http://my-gw/v1', False),
        ('scratch', 'ollama', 'http://scratch:11434', False)]
    assert eps['gw'].api_key_env == 'MY_GW' and eps['lab'].where == s.project


def test_the_system_file_is_the_variable_then_etc_then_the_environment_prefix(tmp_path, monkeypatch):
    assert system_ini({'BOOPITER_SYSTEM_SETTINGS': str(tmp_path/'missing.ini')}) == tmp_path/'missing.ini'
    import boopiter_ext.settings as settings_mod
    monkeypatch.setattr(settings_mod.sys, 'prefix', str(tmp_path/'env'))
    found = system_ini({})
    assert found is None or found == settings_mod.Path('/etc/boopiter/settings.ini')   # this machine has none, or one
    if found is None:
        write(tmp_path/'env'/'etc'/'boopiter'/'settings.ini', '[boopiter]\n')
        assert system_ini({}) == tmp_path/'env'/'etc'/'boopiter'/'settings.ini'
    assert files(tmp_path).system == str(tmp_path/'etc'/'settings.ini')   # named, though it does not exist


def test_at_most_so_many_endpoints_a_file(tmp_path):
    eps, warnings = read_endpoints(write(tmp_path/'s.ini', ''.join(section(f'e{i}', 'ollama', f'h{i}:1')
                                                                      for i in range(MAX_ENDPOINTS + 2))))
    assert len(eps) == MAX_ENDPOINTS and len(warnings) == 2 and 'at most 32 endpoints a file' in warnings[0]


# -- ids

def test_endpoint_ids_say_which_server():
    assert endpoint_id('gpu1', 'qwen3:8b') == '@gpu1/qwen3:8b' and route_name('@gpu1/qwen3:8b') == 'endpoint'
    assert split_endpoint('@vllm/meta-llama/Llama-3.1-8B') == ('vllm', 'meta-llama/Llama-3.1-8B')
    assert [split_endpoint(m) for m in ('qwen3', '@gpu1', '@/x', '@a b/x', '@gpu1/', 'openai/@x/y')] == [None] * 6
    assert not is_ollama_id('@gpu1') and is_ollama_id('qwen3:8b') and route_name('openai/x') == 'litellm'
    s = load_settings(environ={})
    with pytest.raises(SettingsError, match=r'No endpoint named `gpu1` \(declared: none\)\. Declare it .*\[boopiter\.endpoint\.gpu1\]'):
        endpoint_of('@gpu1/qwen3', s)
    with pytest.raises(SettingsError, match='write `@NAME/MODEL`'): route_kind('@gpu1', s)


names = st.from_regex(ENDPOINT_NAME, fullmatch=True)
models = st.text(st.characters(codec='utf-8', exclude_categories=['Cs']), min_size=1, max_size=40)


@hsettings(max_examples=300, deadline=None)
@given(names, models)
def test_an_endpoint_id_splits_back_into_its_name_and_model(name, model):
    mid = endpoint_id(name, model)
    assert split_endpoint(mid) == (name, model) and route_name(mid) == 'endpoint' and not is_ollama_id(mid)


@hsettings(max_examples=300, deadline=None)
@given(st.one_of(awkward_text(30), st.text(max_size=30), st.sampled_from(['@', '@@a/b', '@a/', '@a', '@a-/b', '@-a/b'])))
def test_any_text_is_an_endpoint_id_or_none_and_never_raises(text):
    parts = split_endpoint(text)
    assert parts is None or (ENDPOINT_NAME.fullmatch(parts[0]) and parts[1] and endpoint_id(*parts) == text)


section_lines = st.one_of(
    st.tuples(st.sampled_from(['kind', 'url', 'api_key_env', 'shared', 'api_key', 'token', 'x']), st.sampled_from([' = ', ': ']),
              st.one_of(awkward_text(20), st.sampled_from(['ollama', 'openai', 'http://h:1/v1', 'h:1', 'on', 'off', 'K',
                                                           'http://[::1]:0', '%(x)s', '']))).map(''.join),
    st.sampled_from(['[boopiter.endpoint.a]', '[boopiter.endpoint.b-2]', '[boopiter.endpoint.]', '[boopiter.endpoint.a b]',
                     '[boopiter.endpoint.' + 'x' * 41 + ']', '[boopiter]', '[other]', '# c', '']), awkward_text(20))
_n = itertools.count()


@hsettings(max_examples=300, deadline=None)
@given(st.lists(section_lines, max_size=10), st.booleans(), st.booleans())
@pytest.mark.heavy
def test_any_endpoint_sections_give_checked_endpoints_or_one_line_warnings(tmp_path_factory, lines, shared, yours):
    path = tmp_path_factory.getbasetemp()/f'ep-{next(_n)}.ini'
    path.write_text('\n'.join(['[boopiter.endpoint.a]', *lines]), encoding='utf-8', errors='surrogatepass')
    eps, warnings = read_endpoints(path, shared, yours)
    assert all('\n' not in w and w for w in warnings)
    for name, ep in eps.items():
        assert isinstance(ep, Endpoint) and ep.name == name and ENDPOINT_NAME.fullmatch(name)
        assert ep.kind in ('ollama', 'openai') and ep.base.startswith(('http://', 'https://'))
        assert isinstance(ep.shared, bool) and (yours or not ep.api_key_env)


# -- answering through named endpoints: the direct clients, never litellm

def test_both_kinds_of_endpoint_answer_with_the_exact_reply_through_the_direct_clients(srv, tmp_path):
    s = files(tmp_path, user=section('box', 'ollama', srv.host) + section('vllm', 'openai', srv.url + '/v1'))
    router = Router()
    try:
        srv.script('  From the\n\nOllama box. ')
        srv.script('From the OpenAI-compatible one.', thinking='hmm ')
        assert ask(router, '@box/qwen3:1.7b', s).answer == '  From the\n\nOllama box. '
        reply = ask(router, '@vllm/qwen3:1.7b', s)
        assert reply.answer == 'From the OpenAI-compatible one.' and reply.reasoning == 'hmm '
        assert [r.path for r in srv.requests if 'chat' in r.path] == ['/api/chat', '/v1/chat/completions']
        assert [c['model'] for c in srv.chats()] == ['qwen3:1.7b', 'qwen3:1.7b'] and router._litellm is None
        assert router.describe('@vllm/qwen3:1.7b', s) == dict(name='OpenAI-compatible endpoint vllm', endpoint=srv.url + '/v1')
        thinking = copy.copy(s)
        thinking['think'] = 'h'
        assert router.model_info('@box/gemma3:4b', s)['vision'] and router.model_info('@vllm/gemma3:4b', s) == {'vision': False}
        assert router.effort('@box/gemma3:4b', thinking, {'capabilities': ['completion']})[0] == ''   # Ollama would refuse it
        assert router.effort('@vllm/gemma3:4b', thinking, {})[0] == 'h'
    finally: router.close()


def test_a_dead_endpoint_says_which_one_and_where_to_fix_it(tmp_path):
    port = free_port()
    s = files(tmp_path, user=section('gpu9', 'openai', f'http://127.0.0.1:{port}/v1') + section('box', 'ollama', f'127.0.0.1:{port}'))
    router = Router()
    try:
        with pytest.raises(Unreachable, match=rf'endpoint gpu9 at http://127.0.0.1:{port}/v1 .*check `url` in '
                                              r'`\[boopiter.endpoint.gpu9\]`'):
            ask(router, '@gpu9/x', s)
        with pytest.raises(Unreachable, match=r'host from endpoint box\)\..* check `url` in `\[boopiter.endpoint.box\]`'):
            ask(router, '@box/x', s)
    finally: router.close()


# -- keys: only to endpoints your own files declare (today's rule, per endpoint)

def auth(srv, path): return [r.headers.get('authorization') for r in srv.requests if r.path == path]


def test_a_key_goes_only_to_the_endpoint_your_own_settings_name_it_for(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('LAB_KEY', 'sk-lab-1')
    s = files(tmp_path, user=section('mine', 'openai', srv.url + '/v1', api_key_env='LAB_KEY')
                             + section('box', 'ollama', srv.host, api_key_env='LAB_KEY')
                             + section('other', 'openai', srv.url + '/v1'))
    router = Router()
    try:
        Catalog(router).refresh(s)
        ask(router, '@mine/qwen3:1.7b', s)
        assert sorted(auth(srv, '/v1/models'), key=str) == ['Bearer sk-lab-1', None]   # `mine` and `other`
        assert auth(srv, '/v1/chat/completions') == ['Bearer sk-lab-1'] and set(auth(srv, '/api/tags')) == {'Bearer sk-lab-1'}
        srv.reset()
        ask(router, '@other/qwen3:1.7b', s)   # the same server, another name: no key
        assert auth(srv, '/v1/chat/completions') == [None]
        assert 'sk-lab-1' not in repr(router.endpoint(s.endpoints['box'], s)) + repr(router.endpoint(s.endpoints['mine'], s))
    finally: router.close()


def test_a_project_files_endpoint_never_gets_a_key_even_under_a_name_you_gave_one(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('LAB_KEY', 'sk-lab-1')
    user = section('lab', 'openai', 'http://my-lab.example/v1', api_key_env='LAB_KEY')
    s = files(tmp_path, user=user, project=section('lab', 'openai', srv.url + '/v1', api_key_env='LAB_KEY')
                                           + section('theirs', 'ollama', srv.host, api_key_env='LAB_KEY'))
    assert s.endpoints['lab'].url == srv.url + '/v1' and not s.endpoints['lab'].api_key_env   # theirs, whole: no key
    assert sum('may not choose which of your variables is sent as a key' in w for w in s.warnings) == 2
    router = Router()
    try:
        listing = Catalog(router).refresh(s)
        assert not {'@lab', '@theirs'} & set(listing.problems)
        ask(router, '@lab/qwen3:1.7b', s)
        ask(router, '@theirs/qwen3:1.7b', s)
        assert {r.headers.get('authorization') for r in srv.requests} == {None}
        forged = Endpoint('lab', 'openai', srv.url + '/v1', 'LAB_KEY', where=s.project)   # as if a reader let it through
        with pytest.raises(SettingsError, match='comes from the project file'): router.endpoint_key(forged, s)
    finally: router.close()


def test_a_key_variable_that_is_not_set_greys_that_endpoint_only(srv, tmp_path):
    s = files(tmp_path, user=section('lab', 'openai', srv.url + '/v1', api_key_env='UNSET_KEY_VAR'))
    router = Router()
    try:
        listing = Catalog(router).refresh(s)
        assert '`api_key_env = UNSET_KEY_VAR` (endpoint `lab`, ' in listing.problems['@lab']
        assert not auth(srv, '/v1/models')
    finally: router.close()


# -- the binding saves the endpoint by name

def test_a_binding_may_name_an_endpoint_only_your_settings_declare_and_it_goes_to_your_server(tmp_path):
    with OllamaTestServer() as mine, OllamaTestServer() as yours:
        a = files(tmp_path/'a', user=section('gpu1', 'ollama', mine.host))
        b = files(tmp_path/'b', user=section('gpu1', 'openai', yours.url + '/v1'))
        nobody = files(tmp_path/'c')
        assert may_choose('@gpu1/qwen3:1.7b', a) and may_choose('@gpu1/qwen3:1.7b', b)
        kept, warnings = screen_binding({'model': '@gpu1/qwen3:1.7b', 'reasoning_model': '@gpu2/x'}, a)
        assert kept == {'model': '@gpu1/qwen3:1.7b'} and warnings == [
            'the saved binding names `@gpu2/x`, on an endpoint `gpu2` your settings do not declare: declare '
            '`[boopiter.endpoint.gpu2]` (its `kind` and `url`) in your settings.ini, or pick another model']
        assert screen_binding({'model': '@gpu1/qwen3:1.7b'}, nobody)[0] == {}
        router = Router()
        try:
            for s in (a, b): ask(router, '@gpu1/qwen3:1.7b', s)
            assert [r.path for r in mine.requests if 'chat' in r.path] == ['/api/chat']
            assert [r.path for r in yours.requests if 'chat' in r.path] == ['/v1/chat/completions']
        finally: router.close()


# -- the catalog: every server in one list, and no waiting for a dead one

def test_every_endpoint_is_listed_together_and_a_dead_or_silent_one_waits_for_nobody(srv, tmp_path):
    silent, refused = Silent(), free_port()
    s = files(tmp_path, user=section('box', 'ollama', srv.host) + section('vllm', 'openai', srv.url + '/v1')
                             + f'[boopiter]\nhost = {srv.host}\nvision_models = @vllm/gemma*\n' + section('hung', 'ollama', silent.host) + section('off', 'openai', f'http://127.0.0.1:{refused}/v1'))
    router = Router()
    catalog = Catalog(router)
    catalog.patience = 2.0   # ample for the live ones on a loaded machine (each refresh runs ~7 threads)
    try:
        t = time.perf_counter()
        first = catalog.refresh(s)
        assert 1.9 < time.perf_counter() - t < 5, first.problems   # the silent one: waited for `patience`, once
        ids = [e.id for e in first.entries]
        assert ids[:3] == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m'] and '@box/qwen3:1.7b' in ids
        box = [e for e in first.entries if e.id.startswith('@box/')]
        assert [(e.name, e.source) for e in box][:1] == [('gemma3:4b @box', 'ollama')] and box[0].context_length == 131072
        assert 'vision' in first.get('@vllm/gemma3:4b').capabilities and first.get('@vllm/gemma3:4b').source == 'endpoint'
        assert first.get('@box/qwen3') is first.get('@box/qwen3:latest') is None and first.get('@box/smollm2:135m')
        assert set(first.problems) == {'@hung', '@off'} and 'no answer within 2 s' in first.problems['@hung']
        assert f'127.0.0.1:{refused}' in first.problems['@off']
        times = []
        for _ in range(3):
            t = time.perf_counter()
            again = catalog.refresh(s)
            times.append(time.perf_counter() - t)
        assert max(times) < catalog.patience / 2 and set(again.problems) == {'@hung', '@off'}, times   # never the silent one's time again
        assert len(silent.conns) == 1   # asked once, on the first refresh, and never again
        assert [e.id for e in again.entries] == ids
    finally:
        silent.close()
        router.close()


def test_a_server_that_comes_back_is_listed_again(tmp_path):
    port = free_port()
    s = files(tmp_path, user=section('late', 'ollama', f'127.0.0.1:{port}'))
    router = Router()
    catalog = Catalog(router)
    try:
        assert '@late' in catalog.refresh(s).problems
        with OllamaTestServer(port=port):
            catalog.refresh(s)   # down last time: not waited for beyond the others, but asked
            deadline = time.monotonic() + 5
            while '@late' in (listing := catalog.refresh(s)).problems and time.monotonic() < deadline: time.sleep(0.05)
            assert '@late/qwen3:1.7b' in [e.id for e in listing.entries] and '@late' not in listing.problems
    finally: router.close()


# -- shared servers: never unload what another kernel loaded

def test_on_a_shared_server_only_the_models_this_kernel_loaded_are_unloaded():
    # a server of its own: what it holds in memory is asserted exactly, and the session's server may still be tidied
    # by an earlier test's background thread
    with OllamaTestServer() as srv:
        with OllamaClient(srv.host, shared=True) as c:
            srv.loaded = {'gemma3:4b'}   # a colleague's
            pump(c.chat('qwen3:1.7b', MSGS), Reply('q'))        # not in memory before: this kernel loads it
            pump(c.chat('gemma3:4b', MSGS), Reply('g'))         # already there: someone else's
            assert c.mine == {'qwen3:1.7b'} and srv.loaded == {'gemma3:4b', 'qwen3:1.7b'}
            for model in ('gemma3:4b', 'qwen3:1.7b'): pump(c.chat(model, MSGS, keep_alive=0), Reply(model))
            assert [c_.get('keep_alive') for c_ in srv.chats()[-2:]] == [None, 0]   # `0` unloads after the reply: only ours
            deadline = time.monotonic() + 10   # the server unloads once its reply is sent, as Ollama does: after the
            while 'qwen3:1.7b' in srv.loaded and time.monotonic() < deadline: time.sleep(0.01)   # client read its end
            assert srv.loaded == {'gemma3:4b'}
            srv.loaded = {'gemma3:4b', 'qwen3:1.7b'}
            assert sync_ollama_loaded(['smollm2:135m'], c) == ['qwen3:1.7b'] and srv.loaded == {'gemma3:4b'}
            srv.reset()
            srv.loaded = {'gemma3:4b', 'smollm2:135m'}
            assert sync_ollama_loaded([], c) == [] and srv.requests == []   # nothing of ours: not even /api/ps
            with pytest.warns(RuntimeWarning, match=r'Could not unload gemma3:4b: gemma3:4b stays loaded: Ollama at .* is shared'):
                assert not unload_ollama_model('gemma3:4b', c)   # asked by name, too (the bench unloads what it ran)
            assert srv.requests == [] and srv.loaded == {'gemma3:4b', 'smollm2:135m'}
        with OllamaClient(srv.host) as c:   # not shared: today's rule, every other model goes
            assert sorted(sync_ollama_loaded(['gemma3:4b'], c)) == ['smollm2:135m']
            srv.loaded = {'gemma3:4b', 'qwen3:1.7b'}   # a pick on an endpoint that may be this very server stays loaded
            assert sync_ollama_loaded(['@desk/qwen3:1.7b', None, 'deaddrop/x'], c) == ['gemma3:4b'] and srv.loaded == {'qwen3:1.7b'}


def test_the_system_files_host_and_endpoints_are_shared_unless_they_say_not(srv, tmp_path):
    s = files(tmp_path, system=f'[boopiter]\nhost = {srv.host}\n' + section('lab', 'ollama', srv.host)
                               + section('mine', 'ollama', f'127.0.0.1:{srv.port}/', shared='off'),
              user=section('desk', 'ollama', f'localhost:{srv.port}'))
    router = Router()
    try:
        assert router.ollama(s).shared and router.endpoint(s.endpoints['lab'], s).shared
        assert not router.endpoint(s.endpoints['desk'], s).shared
        assert s.endpoints['mine'].shared is False and s.endpoints['lab'].shared is True
        assert 'the system settings file' in router.ollama(s).source
    finally: router.close()


def test_a_pick_tidies_every_named_ollama_endpoint_this_kernel_used_and_keeps_others_models(shell, srv, tmp_path,
                                                                                             monkeypatch):
    "Switching from one model on the team's box to another frees what this kernel loaded there, and only that."
    from conftest import run
    with OllamaTestServer() as box:
        write(tmp_path/'xdg'/'boopiter'/'settings.ini', section('box', 'ollama', box.host, shared='on'))
        monkeypatch.setenv('OLLAMA_HOST', srv.host)
        box.loaded = {'gemma3:4b'}                                   # a colleague's
        run(shell, '%load_ext boopiter_ext')
        assert run(shell, '%%prompt -m @box/qwen3:1.7b\nhi').success   # this kernel loads it there
        assert box.loaded == {'gemma3:4b', 'qwen3:1.7b'}
        tidier = lambda: shell.magics_manager.registry['BoopMagics'].assistant._tidier
        shell.run_line_magic('boop', 'model @box/smollm2:135m')
        assert tidier().wait(10) and box.loaded == {'gemma3:4b'}      # ours freed, the colleague's kept
        unloads = [r.json['model'] for r in box.requests if r.path == '/api/generate' and r.json.get('keep_alive') == 0]
        assert unloads == ['qwen3:1.7b']
        box.loaded.add('qwen3:1.7b')                                 # loaded again, by someone else this time
        shell.run_line_magic('boop', 'model @box/gemma3:4b')
        assert tidier().wait(10) and box.loaded == {'gemma3:4b', 'qwen3:1.7b'}   # ours went already: nothing to do
