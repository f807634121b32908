"""Shared fixtures: a clean environment, the Ollama-protocol test server, fresh shells and real kernels."""

import os, sys
from pathlib import Path
import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE)]
os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'

from boopiter_ext.faces.run import import_nbformat   # noqa: E402
import_nbformat()   # before any test module imports it: 2.8 s less in every worker (see there)

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


# whole files of minutes of CPU: the frontend's vitest and the lint; and
# litellm's tests (importing it costs 9.5 s of CPU a process with litellm 1.110)
_HEAVY_FILES = {'test_frontend_units.py', 'test_lint.py', 'test_litellm.py'}


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist's own, which reads the groups (it runs first otherwise)
def pytest_collection_modifyitems(items):
    """A test that takes the `kernel` fixture (directly or through another fixture) starts a kernel: it is `slow`. One
    that takes seconds of CPU in this process is `heavy`: a `timed` one (it measures rates at sizes that take seconds),
    every test of `_HEAVY_FILES`, and every generated corpus (`corpus`). The fast tests (`-m 'not slow and not heavy'`)
    are what is left; mutation testing (tests/mutation.py) runs the heavy ones too.
    Under pytest-xdist (`-n 2 --dist loadgroup`) the browser tests share one worker, so its Jupyter servers start once
    (`jupyter_servers`), and the tests that run the embedded model (`embedded`) share one worker's cores one at a time."""
    for item in items:
        if 'kernel' in getattr(item, 'fixturenames', ()) and not item.get_closest_marker('slow'):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker('timed') or item.get_closest_marker('corpus') or item.path.name in _HEAVY_FILES:
            item.add_marker(pytest.mark.heavy)
        if _in_browser(item.nodeid): item.add_marker(pytest.mark.xdist_group('browser'))
        elif item.get_closest_marker('embedded'): item.add_marker(pytest.mark.xdist_group('embedded'))


def _in_browser(nodeid:str)->bool:
    "Whether the test `nodeid` names is a browser test (tests/test_browser*.py: tests/browser.py's harness)."
    return nodeid.partition('::')[0].rpartition('/')[2].startswith('test_browser')


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Under `--dist loadgroup` the groups hold, or the run stops at once: a worker's collection names each browser test
    with its group (`...@browser`), which pytest 9.2 leaves out (pytest-xdist#1386): the groups were split silently."""
    if node.config.getoption('dist') != 'loadgroup': return
    lost = [i for i in ids if _in_browser(i) and '@' not in i.rpartition(']')[2]]
    if lost: pytest.exit(f'pytest-xdist did not group {lost[0]} and {len(lost) - 1} more: pytest {pytest.__version__} '
                         'ignores its groups (pytest-xdist#1386); install pytest<9.2', returncode=3)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    """Under tests/coverage.sh each process saves its coverage data when it exits. pytest-xdist kills a worker that has
    not exited 10 s after its last test (`EXIT_TIMEOUT`; exit waits for thread pools and atexit handlers, longer on a
    loaded machine), and that worker's data was lost: whole runs read 90% instead of 96%. Saved here, before the worker
    reports that it has finished; a later save at exit rewrites the same file with the same data."""
    if 'coverage' in sys.modules:
        import coverage
        if (cov := coverage.Coverage.current()) is not None: cov.save()


@pytest.fixture(autouse=True)
def untraced_when_timed_or_corpus(request):
    """A test marked `timed` measures how its code's time grows (rates and ratios): coverage's tracer, which would
    multiply the time of every Python call it makes, is paused while it runs (the lines it runs are covered by others),
    and so is the garbage collector, whose full passes grow with whatever else the test process holds. A `corpus` test
    runs the same lines as the fast tests on thousands of generated inputs: the tracer is paused for it too (it took
    2-3x the time traced), the garbage collector not."""
    timed = request.node.get_closest_marker('timed')
    if not (timed or request.node.get_closest_marker('corpus')):
        yield
        return
    import gc
    cov = None
    if 'coverage' in sys.modules:
        import coverage
        cov = coverage.Coverage.current()
    if cov: cov.stop()
    if timed:
        gc.collect()
        gc.disable()
    try: yield
    finally:
        if timed: gc.enable()
        if cov: cov.start()


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


@pytest.fixture(scope='session')
def jupyter_servers(server, tmp_path_factory):
    "The browser tests' `jupyter lab` and `jupyter notebook`, each started when a test first needs it, once a session."
    from browser import Servers
    with Servers(tmp_path_factory, server.host) as s: yield s


@pytest.fixture(scope='session')
def browsing():
    "The browser tests' chromium and its one context (tests/browser.py), started when a test first needs it."
    from browser import browsing
    with browsing() as context: yield context


@pytest.fixture
def srv(server):
    "The session's test server, reset for this test: what a test sets on it (a responder, a delay, models) is undone."
    server.reset()
    server.show_delay = 0.0
    kept = dict(answer_s=server.answer_s, responder=server.responder, default_reply=server.default_reply,
                models=list(server.models))
    yield server
    server.reset()
    for k, v in kept.items(): setattr(server, k, v)


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
