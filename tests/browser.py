"""The browser tests' harness: a real `jupyter lab` / `jupyter notebook` server per test session (one each, shared by
every browser test: each test writes its own notebooks, and its kernels are shut down after it), headless Debian
chromium driven by playwright (one browser context a session, whose caches make each page after the first open
faster; a fresh page per test), and helpers that act as a user does and wait for conditions (never for time; a
condition is checked every 100 ms, which costs the page less than checking it every frame).

    from browser import app, lab, nb7, page, artifacts   # the fixtures

    @both_apps                                  # once in JupyterLab 4, once in Notebook 7
    def test_x(app, page, srv): ...             # `app`: that server; its kernels are shut down after the test

Needs `pip install -e '.[browser]'` and Debian's chromium (never `playwright install`). Set BOOPITER_ARTIFACTS to keep
the screenshots. Selectors come from js/src: the toolbar item `[data-jp-item-name="boopiter-menu"]` (button
`.boop-MenuButton`, popup `.boop-MenuPanel`), prompt cells `.boop-PromptCell`, replies `.boop-Reply` with
`data-boop-status` and `data-boop-pending`, code actions `[data-boop-action]`.
"""

import contextlib, importlib.util, json, os, re, shutil, signal, struct, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path
import nbformat, psutil, pytest
from conftest import _LEAKY
from ollama_server import free_port

CHROMIUM = '/usr/bin/chromium'
CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
                 '--disable-smooth-scrolling']   # a wheel scrolls at once: the tests read where it left the page
TOKEN = 'boopiter-browser-test'
APPS = ['lab', 'notebook']
REPLY_MIME = 'application/vnd.boopiter.reply+json'
BINDING_MIME = 'application/vnd.boopiter.settings+json'

# JavaScript run in the page; `window.jupyterapp` is there thanks to expose_app_in_browser
PANEL = 'window.jupyterapp?.shell.currentWidget'
KERNEL = f'{PANEL}?.sessionContext?.session?.kernel'
KERNEL_STATUS = f'{KERNEL}?.status'
ALL_RAN = f"{PANEL}.content.widgets.every(c => c.model.type !== 'code' || c.model.executionCount !== null)"
OUTPUT_TEXTS = (f'i => Array.from({PANEL}.content.widgets[i].outputArea.node.querySelectorAll(".jp-OutputArea-output"),'
                ' o => o.innerText)')
MENU_ITEM = '.jp-NotebookPanel-toolbar [data-jp-item-name="boopiter-menu"]'
MENU_BUTTON = f'{MENU_ITEM} .boop-MenuButton'
MENU_PHASE = f"document.querySelector('{MENU_ITEM}')?.dataset.phase"
MENU_PANEL = '.boop-MenuPanel'


def chromium_or_skip():
    "Skip only on a developer machine without chromium; under CI a missing browser is a failure."
    if os.path.exists(CHROMIUM): return
    if os.environ.get('CI'): pytest.fail(f'{CHROMIUM} is missing: CI must run the browser tests (apt-get install chromium)')
    pytest.skip(f'{CHROMIUM} is missing (apt-get install chromium); browser tests run only where it is (always under CI)')


class Jupyter:
    "A `jupyter lab` or `jupyter notebook` server (its own process group) on a free loopback port, as root."
    def __init__(self, app, tmp, ollama_host):
        self.app, self.tmp = app, tmp
        self.root, self.log_path, self.port = tmp/'root', tmp/f'{app}.log', free_port()
        self.root.mkdir()
        self.base = f'http://127.0.0.1:{self.port}'
        self.ipython_dir = tmp/'ipython'
        settings = tmp/'lab-settings'
        news = settings/'@jupyterlab'/'apputils-extension'/'notification.jupyterlab-settings'
        news.parent.mkdir(parents=True)
        news.write_text('{"fetchNews": "false", "checkForUpdates": false}')  # no news toast over the notebook
        autosave = settings/'@jupyterlab'/'docmanager-extension'/'plugin.jupyterlab-settings'
        autosave.parent.mkdir(parents=True)
        autosave.write_text('{"autosave": false}')   # a file on disk changes only when a test saves it
        env = {k: v for k,v in os.environ.items() if k not in _LEAKY}
        traced = env.pop('COVERAGE_PROCESS_CONFIG', None)   # under tests/coverage.sh: the kernels, not the server
        if traced:   # JUPYTER_PATH comes first, before even the venv's own kernelspecs
            self.kernelspec(tmp/'jupyter-path', COVERAGE_PROCESS_CONFIG=traced)
            env['JUPYTER_PATH'] = os.pathsep.join(p for p in (str(tmp/'jupyter-path'), env.get('JUPYTER_PATH')) if p)
        # JUPYTER_DATA_DIR: the notebook signatures (trust) stay in the test's folder; extensions are in sys.prefix
        # the kernels talk over local sockets (ipc), not TCP ports: a port the server picked for a kernel could be taken
        # by another process before the kernel bound it, and the server restarts a kernel on the same ports (CI saw a
        # kernel fail five times so); a short runtime folder keeps the socket paths under the OS's 107 characters
        self.runtime = Path(tempfile.mkdtemp(prefix='boop-rt-'))
        self.env = dict(env, OLLAMA_HOST=ollama_host, IPYTHONDIR=str(self.ipython_dir), XDG_CONFIG_HOME=str(tmp/'xdg'),
                        JUPYTER_CONFIG_DIR=str(tmp/'jupyter-config'), JUPYTER_RUNTIME_DIR=str(self.runtime),
                        JUPYTER_DATA_DIR=str(tmp/'jupyter-data'), BOOPITER_DEADDROP_DIR=str(tmp/'dead_drop'),
                        JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(tmp/'workspaces'))
        module = {'lab': 'jupyterlab', 'notebook': 'notebook'}[app]
        args = [sys.executable, '-m', module, '--allow-root', '--no-browser', '--ServerApp.ip=127.0.0.1',
                f'--ServerApp.port={self.port}', '--ServerApp.port_retries=0', f'--IdentityProvider.token={TOKEN}',
                f'--ServerApp.root_dir={self.root}', '--LabApp.expose_app_in_browser=True', '--LabApp.news_url=',
                '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate', '--KernelManager.transport=ipc']
        if app == 'notebook': args.append('--JupyterNotebookApp.expose_app_in_browser=True')
        if importlib.util.find_spec('jupyter_collaboration'): args.append('--YDocExtension.disable_rtc=True')
        with open(self.log_path, 'wb') as log:
            self.proc = subprocess.Popen(args, env=self.env, cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    @staticmethod
    def kernelspec(data_dir, **env):
        """The `python3` kernel as ipykernel installs it, with `env` added: the server runs no boopiter code, so only its
        kernels are measured (tracing the server's Tornado loop made each browser test slower, for nothing)."""
        spec = data_dir/'kernels'/'python3'/'kernel.json'
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_text(json.dumps(dict(argv=[sys.executable, '-m', 'ipykernel_launcher', '-f', '{connection_file}'],
                                        display_name='Python 3 (ipykernel)', language='python',
                                        metadata={'debugger': True}, env=env)))

    def url(self, path): return f'{self.base}/{path}?token={TOKEN}'

    def notebook_url(self, name):
        "Where a user opens notebook `name`: Lab in a workspace of its own (no layout carried over), NB 7 its page."
        return f'lab/workspaces/{Path(name).stem}/tree/{name}' if self.app == 'lab' else f'notebooks/{name}'

    def log_tail(self, n=40):
        return '\n'.join(self.log_path.read_text(errors='replace').splitlines()[-n:])

    def api(self, path, method='GET', body=None):
        req = urllib.request.Request(self.url(path), data=None if body is None else json.dumps(body).encode(),
                                     method=method, headers={'Content-Type': 'application/json'})
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read()
            return json.loads(data) if data else None

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url('api/status'), timeout=2) as r:
                    if r.status == 200: return self
            except OSError: time.sleep(0.1)
        raise AssertionError(f'jupyter server not up on port {self.port} (exit {self.proc.poll()}):\n{self.log_tail()}')

    def shutdown_kernels(self):
        "What 'Shut Down All Kernels' does; a test that left a kernel running leaves none to the next."
        for k in self.api('api/kernels'): self.api(f'api/kernels/{k["id"]}', 'DELETE')

    def stop(self):
        "SIGTERM the server's process group (the server shuts its kernels down), then kill anything left."
        try: kernels = psutil.Process(self.proc.pid).children(recursive=True)  # own sessions: not in the group
        except psutil.NoSuchProcess: kernels = []
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
            try: os.killpg(self.proc.pid, sig)
            except ProcessLookupError: pass
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired: continue
        _, alive = psutil.wait_procs(kernels, timeout=10)
        for p in alive: p.kill()
        psutil.wait_procs(alive, timeout=5)
        shutil.rmtree(self.runtime, ignore_errors=True)
        return alive


@contextlib.contextmanager
def browsing():
    """Debian's chromium and one context in it (conftest's `browsing`, once a session): its HTTP and compiled-code
    caches open JupyterLab faster on every page after the first. The `page` fixture leaves nothing behind in it."""
    chromium_or_skip()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={'width': 1280, 'height': 1000})
            try: yield context
            finally: context.close()
        finally: browser.close()


class Servers:
    "The session's Jupyter servers (conftest's `jupyter_servers`): each app's started on first use, all stopped at the end."
    def __init__(self, tmp_path_factory, ollama_host): self.tmp, self.host, self.running = tmp_path_factory, ollama_host, {}
    def __enter__(self): return self

    def get(self, app)->Jupyter:
        if app not in self.running:
            server = Jupyter(app, self.tmp.mktemp({'lab': 'lab', 'notebook': 'nb7'}[app]), self.host)
            self.running[app] = server
            server.wait_ready()
        return self.running[app]

    def __exit__(self, *exc):
        outlived = [app for app, server in self.running.items() if server.stop()]
        assert not outlived, f'kernels outlived their server: {outlived}'


@pytest.fixture(scope='session')
def lab(jupyter_servers):
    chromium_or_skip()
    return jupyter_servers.get('lab')


@pytest.fixture(scope='session')
def nb7(jupyter_servers):
    chromium_or_skip()
    return jupyter_servers.get('notebook')


@pytest.fixture
def app(request):
    "The Jupyter server of the test's `app` parameter ('lab' or 'notebook'); its kernels are shut down afterwards."
    server = request.getfixturevalue({'lab': 'lab', 'notebook': 'nb7'}[request.param])
    yield server
    server.shutdown_kernels()


def both_apps(fn):
    "Run the test in JupyterLab 4 and in Notebook 7."
    return pytest.mark.parametrize('app', APPS, indirect=True)(fn)


@pytest.fixture
def page(browsing):
    "A new page in the session's browser context; it, any page it opened and any permission granted go afterwards."
    page = browsing.new_page()
    try: yield page
    finally:
        for p in browsing.pages: p.close()
        browsing.clear_permissions()


@pytest.fixture
def artifacts(request, tmp_path):
    "Where screenshots go: BOOPITER_ARTIFACTS (relative to where pytest was started), else the test's tmp folder."
    out = Path(request.config.invocation_params.dir, os.environ.get('BOOPITER_ARTIFACTS', tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    return out


# -- notebooks on disk

def code(source, outputs=(), count=None):
    return nbformat.v4.new_code_cell(source, outputs=list(outputs), execution_count=count)


def write_notebook(path, sources, metadata=None, kernel=True):
    """A notebook; sources starting with '#' are Markdown cells, strings others code cells, nbformat cells as they are.
    With a kernelspec unless `kernel` is false (else Lab asks which kernel to start)."""
    md = {'kernelspec': {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}} if kernel else {}
    nb = nbformat.v4.new_notebook(metadata={**md, **(metadata or {})})
    nb.cells = [s if not isinstance(s, str) else nbformat.v4.new_markdown_cell(s) if s.startswith('#')
                else nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def read(path): return nbformat.read(path, as_version=4)


def saved_reply(saved, cell):
    "The one reply output of the saved prompt cell."
    replies = [o for o in saved.cells[cell].outputs if o.get('metadata', {}).get('boopiter', {}).get('reply')]
    assert len(replies) == 1, saved.cells[cell].outputs
    return replies[0]


# -- waiting and acting in the page

def until(page, server, js, what, timeout=60, arg=None):
    "Wait for the JavaScript expression `js` to be truthy; on timeout fail with the server's log."
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try: return page.wait_for_function(f'(arg) => {js}', arg=arg, timeout=timeout * 1000, polling=100)
    except PlaywrightTimeout:
        raise AssertionError(f'no {what} after {timeout} s; server log:\n{server.log_tail()}') from None


def open_notebook(page, server, name, kernel=True):
    "Open notebook `name` and wait for its kernel to be idle (or, `kernel=False`, for the notebook to show)."
    page.goto(server.url(server.notebook_url(name)))
    until(page, server, f"{PANEL}?.content?.widgets?.length > 0 && {PANEL}.context.isReady", 'notebook')
    if kernel: until(page, server, f"{KERNEL_STATUS} === 'idle'", 'idle kernel')


def run_all(page, server):
    "Start 'run all' without waiting on its promise (it resolves only once every cell has finished)."
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    until(page, server, f"{KERNEL_STATUS} === 'busy' || {ALL_RAN}", 'busy kernel')


def restart_and_run_all(page, app):
    "Kernel › Restart Kernel and Run All Cells…, as a user does it: the command, and Restart in its dialog."
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:restart-run-all'); }")
    page.locator('.jp-Dialog .jp-Dialog-button.jp-mod-accept').click()
    until(page, app, "!document.querySelector('.jp-Dialog')", 'the dialog closed')


def wait_all_ran(page, server, timeout=60):
    "The kernel goes idle between cells, so 'done' is: idle and every code cell has its execution count."
    until(page, server, f"{KERNEL_STATUS} === 'idle' && {ALL_RAN}", 'end of run-all', timeout)


def clear_counts(page):
    "Clear every output and count (as Edit > Clear Outputs of All Cells), so a run-all's end can be told from its start."
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")


def run_cell(page, cell):
    "Make `cell` the only selected cell and run it as Ctrl+Enter does (fire and forget, like run all)."
    page.evaluate(f"""() => {{ const nb = {PANEL}.content;
        nb.mode = 'command'; nb.deselectAll(); nb.activeCellIndex = {cell};
        window.jupyterapp.commands.execute('notebook:run-cell'); }}""")


def execute_silently(page, code):
    "Run `code` in the kernel as the extension's own requests do: no cell, no history."
    page.evaluate(f"async (code) => {{ await {KERNEL}.requestExecute({{code, silent: true, store_history: false}}).done; }}", code)


def save(page):
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")


def wait_for_chat(server, srv, n, timeout=60):
    "Wait until the test server has had `n` chat requests."
    deadline = time.monotonic() + timeout
    while len(srv.chats()) < n:
        assert time.monotonic() < deadline, f'no chat request {n}; server log:\n{server.log_tail()}'
        time.sleep(0.05)


def cells(page): return page.locator('.jp-Notebook .jp-Cell')


def reply(page, cell, nth=0):
    "The `nth` reply view in the outputs of `cell`."
    return cells(page).nth(cell).locator('.boop-Reply').nth(nth)


def reply_done(cell, nth=0):
    "JavaScript: the `nth` reply of `cell` has its final status and nothing left to render."
    return (f"(r => r && !['waiting', 'streaming'].includes(r.dataset.boopStatus) && r.dataset.boopPending === '0')"
            f"({PANEL}.content.widgets[{cell}].outputArea.node.querySelectorAll('.boop-Reply')[{nth}])")


def record(page, cell, sample, key='rec'):
    """Record `sample(cellNode)` (JavaScript function source) on every change of cell `cell`'s DOM, whenever it differs
    from the last sample: what the page showed as it streamed, without polling from here. Read with `recorded`."""
    page.evaluate(f"""([cell, key]) => {{
        const node = {PANEL}.content.widgets[cell].node, sample = {sample};
        const rec = (window.__rec ??= {{}})[key] = [];
        const take = () => {{ const v = sample(node), last = rec[rec.length - 1];
                             if (JSON.stringify(v) !== JSON.stringify(last)) rec.push(v); }};
        (window.__obs ??= {{}})[key]?.disconnect();
        const obs = window.__obs[key] = new MutationObserver(take);
        obs.observe(node, {{subtree: true, childList: true, characterData: true, attributes: true}});
        take(); }}""", [cell, key])


def recorded(page, key='rec'):
    "The samples `record` took (and stop recording)."
    return page.evaluate("(key) => { window.__obs[key].disconnect(); return window.__rec[key]; }", key)


def open_menu(page, server):
    "Click the brain menu's button; the popup opens."
    page.locator(MENU_BUTTON).click()
    page.locator(MENU_PANEL).wait_for()
    return page.locator(MENU_PANEL)


def answering(page):
    "The menu's status line: which model answers and why."
    return page.locator(f'{MENU_PANEL} .boop-Menu-answering').inner_text()


def until_answering(page, server, start):
    """Wait until the menu's status line starts with `start`. A pick shows in the menu at once, and in the notebook's
    metadata when the kernel sends the binding back; the status line follows, in the kernel's next state message."""
    until(page, server, f"document.querySelector('{MENU_PANEL} .boop-Menu-answering')?.textContent.startsWith(arg)",
          f'the status line {start!r}', arg=start)


SERVER_MODELS = ('gemma3:4b', 'qwen3:1.7b', 'smollm2:135m')
# the kernel's own choice, as the status line words it: `auto → MODEL (why)` (or the older `MODEL (auto: why)`)
AUTO_STATUS = re.compile(r'answering: (?:auto → (\S+) \(|(\S+) \(auto: )')


def auto_model(page):
    """The model the kernel picks by itself (nothing picked), as the menu's status line says: the tests read the kernel's
    choice rather than assume it; it must be one of the test server's models, and the toolbar button names it."""
    status = answering(page)
    m = AUTO_STATUS.match(status)
    model = m and (m[1] or m[2])
    assert model in SERVER_MODELS, status
    return model


def set_theme(page, server, dark):
    "Switch the theme as a user does in Settings > Theme; the choice is saved in the server's user settings."
    theme = 'JupyterLab Dark' if dark else 'JupyterLab Light'
    page.evaluate("async (theme) => { await window.jupyterapp.commands.execute('apputils:change-theme', {theme}); }", theme)
    until(page, server, f"document.body.dataset.jpThemeLight === '{str(not dark).lower()}' && "
                        f"document.body.dataset.jpThemeName === '{theme}' && !document.querySelector('#jupyterlab-splash')",
          f'{theme} theme')   # Lab shows its splash screen while it swaps the theme's CSS
    # the theme's CSS variables are in place once the body's computed colour is the theme's
    until(page, server, "(c => c && getComputedStyle(document.body).backgroundColor !== 'rgba(0, 0, 0, 0)')"
                        "(getComputedStyle(document.body).getPropertyValue('--jp-layout-color0'))", 'theme CSS')


def check_png(shot, width, height, size):
    "`shot` is a PNG wider, higher and bigger than given (not a blank sliver)."
    head = shot.read_bytes()[:24]
    w, h = struct.unpack('>II', head[16:24])
    assert head.startswith(b'\x89PNG') and w > width and h > height and shot.stat().st_size > size, (w, h, shot.stat().st_size)


def screenshot(locator, path, min_size=(200, 40, 2000)):
    "A screenshot of `locator` at `path` (replaced), checked to be a real image."
    path.unlink(missing_ok=True)
    locator.screenshot(path=path)
    check_png(path, *min_size)
    return path


def in_both_themes(page, server, artifacts, name, shoot, min_size=(200, 40, 2000)):
    """Screenshots `name-light.png` and `name-dark.png` of what `shoot()` returns (a locator, taken after the switch),
    and back to light; returns the two paths."""
    shots = []
    for dark in (False, True):
        set_theme(page, server, dark)
        shots.append(screenshot(shoot(), artifacts/f'{name}-{"dark" if dark else "light"}.png', min_size))
    set_theme(page, server, False)
    return shots


# -- long replies

def long_markdown(words, seed=0):
    "Markdown of about `words` words, as a long reply is: paragraphs with inline marks, lists and python blocks in turn."
    import random
    rnd = random.Random(seed)
    vocab = 'the model reads each cell and writes a short answer about data frames plots loops and errors'.split()
    out, n, i = [], 0, 0
    while n < words:
        i += 1
        if i % 4 == 0: block = f'```python\nfor k in range({i}):\n    print(k * {i})  # step {i}\n```'
        elif i % 4 == 2: block = '\n'.join(f'- item {i}.{j}: **{rnd.choice(vocab)}** and `{rnd.choice(vocab)}`' for j in range(4))
        else: block = ' '.join(rnd.choice(vocab) for _ in range(60)) + f' (paragraph {i}).'
        out.append(block)
        n += len(block.split())
    return '\n\n'.join(out)


def load_from_menu(page, server):
    """Load boopiter as a user does in a notebook that never used it: one click on the brain menu's 'Load boopiter',
    which puts a `%load_ext boopiter_ext` cell above the first code cell and runs it (cells below it move down one)."""
    until(page, server, f"{MENU_PHASE} === 'absent'", "the menu offering 'Load boopiter'")
    page.locator(MENU_BUTTON).click()
    until(page, server, f"{MENU_PHASE} === 'ready' && document.querySelector('{MENU_PANEL}')", 'boopiter loaded')
    page.keyboard.press('Escape')
    until(page, server, f"!document.querySelector('{MENU_PANEL}')", 'the menu closed')


LOAD_CODE = '__import__("boopiter_ext")._frontend_load(get_ipython())'


def load_boopiter(page, server):
    """boopiter loaded in the kernel, silently and with no cell added (as the page loads it for a notebook that used it
    before), for tests about something else: their cells stay where they are."""
    until(page, server, f"{MENU_PHASE} === 'absent'", 'the menu, before loading')
    execute_silently(page, LOAD_CODE)
    until(page, server, f"{MENU_PHASE} === 'ready'", 'boopiter loaded')
