"""Shared fixtures: a clean environment, the Ollama-protocol test server, fresh shells and real kernels."""

import os, sys
from pathlib import Path
import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE)]
os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'

from ollama_server import OllamaTestServer  # noqa: E402
from kernels import KernelSession           # noqa: E402

_LEAKY = ('OLLAMA_HOST', 'JPY_SESSION_NAME', 'BOOPITER_NOTEBOOK', 'BOOPITER_CASSETTE', 'OPENAI_API_KEY', 'OPENAI_BASE_URL')


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch, tmp_path):
    "No host, notebook or user settings leak in from the machine; each test works in its own folder."
    for k in _LEAKY: monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv('XDG_CONFIG_HOME', str(tmp_path/'xdg'))
    monkeypatch.setenv('IPYTHONDIR', str(tmp_path/'ipython'))
    monkeypatch.setenv('BOOPITER_DEADDROP_DIR', str(tmp_path/'dead_drop'))
    monkeypatch.chdir(tmp_path)


def pytest_collection_modifyitems(items):
    "A test that takes the `kernel` fixture (directly or through another fixture) starts a kernel: it is slow."
    for item in items:
        if 'kernel' in getattr(item, 'fixturenames', ()) and not item.get_closest_marker('slow'):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def kernels_only_in_slow_tests(request, monkeypatch):
    "A test that starts a kernel (KernelSession, nbclient, run_notebook) must be marked `slow`, or it fails saying so."
    if request.node.get_closest_marker('slow'): return
    from jupyter_client.manager import KernelManager
    async def refused(self, *args, **kw):
        raise AssertionError(f'{request.node.nodeid} starts a kernel: mark it `@pytest.mark.slow`')
    monkeypatch.setattr(KernelManager, '_async_launch_kernel', refused)


@pytest.fixture(scope='session')
def server():
    with OllamaTestServer() as s: yield s


@pytest.fixture
def srv(server):
    "The session's test server, reset for this test."
    server.reset()
    server.show_delay = 0.0
    yield server
    server.reset()


@pytest.fixture
def shell(tmp_path):
    "A fresh in-process InteractiveShell (no kernel), history in memory."
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    InteractiveShell.clear_instance()
    # no background litellm import in the test process: test_extension checks warm-up in a subprocess
    ip = InteractiveShell.instance(config=Config(HistoryManager=dict(hist_file=':memory:'), BoopMagics=dict(warm_up=False, get_ready=False)))
    yield ip
    if 'BoopMagics' in ip.magics_manager.registry: ip.run_line_magic('unload_ext', 'boopiter_ext')
    InteractiveShell.clear_instance()


def write_code_notebook(path, cells):
    "A Python notebook of code cells with the sources `cells`, written to `path` (returned)."
    import nbformat
    nb = nbformat.v4.new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                                            'language': 'python'}})
    nb.cells = [nbformat.v4.new_code_cell(s) for s in cells]
    nbformat.write(nb, path)
    return path


def saved_replies(path)->list:
    "The boopiter reply outputs saved in the notebook at `path`, in order."
    import nbformat
    return [o for c in nbformat.read(path, as_version=4).cells for o in c.get('outputs', [])
            if o.get('metadata', {}).get('boopiter', {}).get('reply')]


def run(ip, code):
    "Run `code` in `ip` as a user cell (stored in history, like a terminal or notebook cell)."
    return ip.run_cell(code, store_history=True)


@pytest.fixture
def kernel(srv, tmp_path):
    "A real IPython kernel in `tmp_path`, pointed at the test server, with the extension loaded."
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        res = k.run('%load_ext boopiter_ext')
        assert res.status == 'ok', res.outputs
        yield k
