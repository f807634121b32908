"""In the real frontends: JupyterLab 4 and Notebook 7 in headless Chromium (playwright), against the test server.

A notebook is run as a user would run it (run all), the reply streams into the prompt cell and renders
as Markdown with a collapsed details block, the saved file holds the exact reply, and the model saw the
notebook in its order. A model picked in the `%boop` menu is saved in the file and answers
after a kernel restart. Needs `pip install -e '.[browser]'` and Debian's chromium (never `playwright install`).
Set BOOPITER_ARTIFACTS to keep the screenshots.
"""

import importlib.util, json, os, re, signal, struct, subprocess, sys, time, urllib.request
from contextlib import contextmanager
from pathlib import Path
import nbformat, psutil, pytest
from conftest import _LEAKY
from ollama_server import free_port, normalize_model

pytestmark = pytest.mark.slow
CHROMIUM = '/usr/bin/chromium'
CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic']
TOKEN = 'boopiter-browser-test'
MODEL = 'qwen3:1.7b'
NOTE = '## Plan\nMultiply two numbers, then ask the model about the result.'
QUESTION = 'What is x?'
CELLS = [NOTE, '%load_ext boopiter_ext', 'x = 6 * 7\nprint(x)', f'%%prompt -m {MODEL}\n{QUESTION}']
PROMPT_CELL = 3
BOLD = 'x holds 42'
CODE = "assert x == 42\nprint(f'x = {x}')"
REPLY = (f'The variable **{BOLD}**, because the cell above multiplies six by seven and prints the result. '
         'Python evaluates the product first and then binds the name to that integer, so every later cell '
         f'can use it. You can check it yourself:\n\n```python\n{CODE}\n```\n\n'
         'If you run that cell again with other numbers, x changes and so does this answer.')

# JavaScript run in the page; `window.jupyterapp` is there thanks to expose_app_in_browser
PANEL = 'window.jupyterapp?.shell.currentWidget'
KERNEL_STATUS = f'{PANEL}?.sessionContext?.session?.kernel?.status'
ALL_RAN = f"{PANEL}.content.widgets.every(c => c.model.type !== 'code' || c.model.executionCount !== null)"
OUTPUT_TEXTS = f'i => Array.from({PANEL}.content.widgets[i].outputArea.node.querySelectorAll(".jp-OutputArea-output"), o => o.innerText)'


def chromium_or_skip():
    "Skip only on a developer machine without chromium; under CI a missing browser is a failure."
    if os.path.exists(CHROMIUM): return
    if os.environ.get('CI'): pytest.fail(f'{CHROMIUM} is missing: CI must run the browser tests (apt-get install chromium)')
    pytest.skip(f'{CHROMIUM} is missing (apt-get install chromium); browser tests run only where it is (always under CI)')


class Jupyter:
    "A `jupyter lab` or `jupyter notebook` server (its own process group) on a free loopback port, as root."
    def __init__(self, app, tmp, ollama_host):
        self.root, self.log_path, self.port = tmp/'root', tmp/f'{app}.log', free_port()
        self.root.mkdir()
        self.base = f'http://127.0.0.1:{self.port}'
        settings = tmp/'lab-settings'
        news = settings/'@jupyterlab'/'apputils-extension'/'notification.jupyterlab-settings'
        news.parent.mkdir(parents=True)
        news.write_text('{"fetchNews": "false", "checkForUpdates": false}')  # no news toast over the notebook
        env = {k: v for k,v in os.environ.items() if k not in _LEAKY}
        env.update(OLLAMA_HOST=ollama_host, IPYTHONDIR=str(tmp/'ipython'), XDG_CONFIG_HOME=str(tmp/'xdg'),
                   JUPYTER_CONFIG_DIR=str(tmp/'jupyter-config'), JUPYTER_RUNTIME_DIR=str(tmp/'runtime'),
                   JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(tmp/'workspaces'))
        module = {'lab': 'jupyterlab', 'notebook': 'notebook'}[app]
        args = [sys.executable, '-m', module, '--allow-root', '--no-browser', '--ServerApp.ip=127.0.0.1',
                f'--ServerApp.port={self.port}', '--ServerApp.port_retries=0', f'--IdentityProvider.token={TOKEN}',
                f'--ServerApp.root_dir={self.root}', '--LabApp.expose_app_in_browser=True', '--LabApp.news_url=',
                '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate']
        if app == 'notebook': args.append('--JupyterNotebookApp.expose_app_in_browser=True')
        if importlib.util.find_spec('jupyter_collaboration'): args.append('--YDocExtension.disable_rtc=True')
        with open(self.log_path, 'wb') as log:
            self.proc = subprocess.Popen(args, env=env, cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    def url(self, path): return f'{self.base}/{path}?token={TOKEN}'

    def log_tail(self, n=40):
        return '\n'.join(self.log_path.read_text(errors='replace').splitlines()[-n:])

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url('api/status'), timeout=2) as r:
                    if r.status == 200: return self
            except OSError: time.sleep(0.1)
        raise AssertionError(f'jupyter server not up on port {self.port} (exit {self.proc.poll()}):\n{self.log_tail()}')

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
        return alive


@contextmanager
def jupyter(app, tmp, ollama_host):
    server = Jupyter(app, tmp, ollama_host)
    try: yield server.wait_ready()
    finally: assert not server.stop(), 'kernels outlived their server'


@pytest.fixture(scope='module')
def chromium():
    chromium_or_skip()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try: yield browser
        finally: browser.close()


@pytest.fixture(scope='module')
def lab(chromium, server, tmp_path_factory):
    with jupyter('lab', tmp_path_factory.mktemp('lab'), server.host) as s: yield s


@pytest.fixture(scope='module')
def nb7(chromium, server, tmp_path_factory):
    with jupyter('notebook', tmp_path_factory.mktemp('nb7'), server.host) as s: yield s


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={'width': 1280, 'height': 1000})
    try: yield context.new_page()
    finally: context.close()


def write_notebook(path, sources):
    "A notebook with a kernelspec (else Lab starts no kernel); sources starting with '#' are Markdown cells."
    nb = nbformat.v4.new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                                            'language': 'python'}})
    nb.cells = [nbformat.v4.new_markdown_cell(s) if s.startswith('#') else nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def until(page, server, js, what, timeout=60):
    "Wait for the JavaScript expression `js` to be truthy; on timeout fail with the server's log."
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try: page.wait_for_function(f'() => {js}', timeout=timeout * 1000)
    except PlaywrightTimeout: raise AssertionError(f'no {what} after {timeout} s; server log:\n{server.log_tail()}') from None


def open_and_run_all(page, server, path):
    "Open the notebook, wait for its kernel, and start 'run all' without waiting on its promise."
    page.goto(server.url(path))
    until(page, server, f"{KERNEL_STATUS} === 'idle'", 'idle kernel')
    # fire and forget: the command's promise resolves only once every cell has finished
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    until(page, server, f"{KERNEL_STATUS} === 'busy' || {ALL_RAN}", 'busy kernel')


def wait_all_ran(page, server):
    "The kernel goes idle between cells, so 'done' is: idle and every code cell has its execution count."
    until(page, server, f"{KERNEL_STATUS} === 'idle' && {ALL_RAN}", 'end of run-all')


def save(page):
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")


def saved_reply(saved, cell=PROMPT_CELL):
    "The one reply output of the saved prompt cell (Run buttons for its code may follow it)."
    replies = [o for o in saved.cells[cell].outputs if o.get('metadata', {}).get('boopiter', {}).get('reply')]
    assert len(replies) == 1, saved.cells[cell].outputs
    return replies[0]


def reply_output(page, cell=PROMPT_CELL):
    "The reply, the first output of the prompt cell."
    return page.locator('.jp-Notebook .jp-Cell').nth(cell).locator('.jp-OutputArea-output').first


def artifacts_dir(request, tmp_path):
    "Where screenshots go: BOOPITER_ARTIFACTS (relative to where pytest was started), else the test's tmp folder."
    artifacts = Path(request.config.invocation_params.dir, os.environ.get('BOOPITER_ARTIFACTS', tmp_path))
    artifacts.mkdir(parents=True, exist_ok=True)
    return artifacts


def check_png(shot, width, height, size):
    "`shot` is a PNG wider, higher and bigger than given (not a blank sliver)."
    head = shot.read_bytes()[:24]
    w, h = struct.unpack('>II', head[16:24])
    assert head.startswith(b'\x89PNG') and w > width and h > height and shot.stat().st_size > size, (w, h, shot.stat().st_size)


def test_lab_streams_renders_and_saves_the_reply_with_the_notebook_as_context(lab, page, srv):
    path = write_notebook(lab.root/'analysis.ipynb', CELLS)
    srv.script(REPLY, delay=0.03)
    open_and_run_all(page, lab, 'lab/workspaces/stream/tree/analysis.ipynb')
    samples, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        texts = page.evaluate(OUTPUT_TEXTS, PROMPT_CELL)
        assert len(texts) <= 1, texts                                        # one display, updated in place
        if texts and 'Reply details' in texts[0]: break
        if texts and texts[0].strip() and 'Waiting for' not in texts[0]: samples.append(texts[0])
        time.sleep(0.05)
    wait_all_ran(page, lab)
    out = reply_output(page)
    final = out.inner_text()
    steps = [s for i,s in enumerate(samples) if i == 0 or s != samples[i-1]]
    assert len(steps) >= 3, steps                                        # streamed in several steps, not one lump
    assert all(len(a) < len(b) for a,b in zip(steps, steps[1:] + [final])), steps   # each one longer
    assert len(steps[0]) < len(final) / 2 and all(s.split()[0] == 'The' for s in steps)   # from the start
    assert out.locator('strong').inner_text() == BOLD
    assert out.locator('pre code').inner_text().strip() == CODE          # a rendered code block, not a fence
    assert '**' not in final and '```' not in final and '<details' not in final
    details = out.locator('details')
    assert details.locator('summary').inner_text().startswith(f'Reply details · {MODEL}')
    assert details.evaluate('d => d.open') is False and details.locator('ul').first.is_hidden()

    save(page)
    saved = nbformat.read(path, as_version=4)
    assert saved.cells[2].outputs[0]['text'] == '42\n'
    reply = saved_reply(saved)
    assert reply['output_type'] == 'display_data' and reply['data']['text/plain'] == REPLY
    assert reply['metadata']['boopiter']['model'] == MODEL and reply['metadata']['boopiter']['status'] == 'done'
    asked = srv.last_chat()['messages'][-1]['content']
    at = [asked.find(s) for s in ('Multiply two numbers', 'x = 6 * 7', '42', QUESTION)]
    assert -1 not in at and at == sorted(at), asked                      # the notebook, in notebook order


def test_lab_reply_screenshot(lab, page, srv, tmp_path, request):
    artifacts = artifacts_dir(request, tmp_path)
    write_notebook(lab.root/'screenshot.ipynb', CELLS)
    srv.script(REPLY)
    open_and_run_all(page, lab, 'lab/workspaces/screenshot/tree/screenshot.ipynb')
    wait_all_ran(page, lab)
    reply_output(page).locator('details').wait_for()
    shot = artifacts/'lab-reply.png'
    shot.unlink(missing_ok=True)
    page.locator('.jp-Notebook .jp-Cell').nth(PROMPT_CELL).locator('.jp-Cell-outputArea').screenshot(path=shot)
    check_png(shot, 300, 100, 5000)


def test_notebook7_renders_and_saves_the_reply(nb7, page, srv):
    path = write_notebook(nb7.root/'analysis.ipynb', CELLS)
    srv.script(REPLY, delay=0.03)
    open_and_run_all(page, nb7, 'notebooks/analysis.ipynb')
    wait_all_ran(page, nb7)
    assert reply_output(page).locator('strong').inner_text() == BOLD
    save(page)
    assert saved_reply(nbformat.read(path, as_version=4))['data']['text/plain'] == REPLY


PICK, AUTO = 'smollm2:135m', 'gemma3:4b'   # the test server's first model by name answers when nothing is picked
BINDING_MIME = 'application/vnd.boopiter.settings+json'
BOUND_CELLS = ['%load_ext boopiter_ext', '%boop', 'x = 6 * 7', f'%%prompt\n{QUESTION}']
BOOP_CELL, BOUND_PROMPT = 1, 3
KERNEL_ID = f'{PANEL}.sessionContext.session.kernel.id'


def notebook_url(app, name):
    return f'lab/workspaces/{Path(name).stem}/tree/{name}' if app == 'lab' else f'notebooks/{name}'


def shows(cell, text):
    "JavaScript: some output of `cell` shows `text`."
    return f'({OUTPUT_TEXTS})({cell}).some(t => t.includes({json.dumps(text)}))'


def plain(label): return label.replace('\xa0', ' ')   # ipywidgets shows an option's spaces as nbsp


def model_select(page):
    return page.locator('.boopiter-toolbar .widget-dropdown:has(> label:text-is("model")) select')


def pick_model(page, name):
    "Pick `name` in the toolbar's model dropdown as a user does, by its option's label."
    select = model_select(page)
    select.locator('option').first.wait_for(state='attached')   # the widget renders after its cell has run
    labels = select.locator('option').evaluate_all('os => os.map(o => o.label)')
    label = next((l for l in labels if plain(l).startswith(name + ' ')), None)
    assert label, labels
    select.select_option(label=label)


def restart_kernel(server, kernel_id):
    "What the UI's restart does: the server restarts the kernel and answers once it is back."
    req = urllib.request.Request(server.url(f'api/kernels/{kernel_id}/restart'), data=b'', method='POST')
    with urllib.request.urlopen(req, timeout=60) as r: assert r.status == 200, r.status


def run_all_for_chat(page, server, srv, path, n):
    "Open and run all; the saved execution counts would pass `wait_all_ran` at once, so wait for chat `n` first."
    open_and_run_all(page, server, path)
    wait_for_chat(server, srv, n)
    wait_all_ran(page, server)


def wait_for_chat(server, srv, n, timeout=60):
    "Wait until the test server has had `n` chat requests."
    deadline = time.monotonic() + timeout
    while len(srv.chats()) < n:
        assert time.monotonic() < deadline, f'no chat request {n}; server log:\n{server.log_tail()}'
        time.sleep(0.05)


def outputs_with(cell, key):
    return [o for o in cell.outputs if key in o.get('data', {})]


@pytest.mark.parametrize('app', ['lab', 'notebook'])
def test_model_picked_in_the_toolbar_is_saved_and_answers_after_a_kernel_restart(app, page, srv, tmp_path, request):
    server = request.getfixturevalue({'lab': 'lab', 'notebook': 'nb7'}[app])
    artifacts = artifacts_dir(request, tmp_path)
    path = write_notebook(server.root/'bound.ipynb', BOUND_CELLS)
    run_all_for_chat(page, server, srv, notebook_url(app, path.name), 1)
    assert srv.last_chat()['model'] == AUTO
    until(page, server, shows(BOOP_CELL, f'answering: {AUTO} (auto'), 'toolbar naming the model that answered')

    pick_model(page, PICK)
    until(page, server, shows(BOOP_CELL, f'boopiter binding · model {PICK}'), 'binding display updated by the pick')
    until(page, server, shows(BOOP_CELL, f'answering: {PICK}'), 'toolbar status updated by the pick')
    shot = artifacts/f'{app}-toolbar.png'
    shot.unlink(missing_ok=True)
    page.locator('.boopiter-toolbar').screenshot(path=shot)
    check_png(shot, 300, 50, 3000)
    save(page)
    [bound] = outputs_with(nbformat.read(path, as_version=4).cells[BOOP_CELL], BINDING_MIME)
    assert bound['data'][BINDING_MIME]['model'] == PICK and PICK in bound['data']['text/plain']

    kernel = page.evaluate(f'() => {KERNEL_ID}')
    page.close()
    restart_kernel(server, kernel)
    page = page.context.new_page()
    run_all_for_chat(page, server, srv, notebook_url(app, path.name), 2)
    assert plain(model_select(page).evaluate('s => s.selectedOptions[0].label')).startswith(PICK + ' ')   # from the file
    details = reply_output(page, BOUND_PROMPT).locator('details')
    assert details.inner_text().startswith(f'Reply details · {PICK} ·')
    save(page)
    saved = nbformat.read(path, as_version=4)
    assert saved.cells[0].outputs == []   # a fresh kernel: the old one would say the extension is already loaded
    reply = saved_reply(saved, BOUND_PROMPT)
    assert reply['metadata']['boopiter']['model'] == PICK
    assert reply['metadata']['boopiter']['model_source'] == 'notebook binding'
    assert [c['model'] for c in srv.chats()] == [AUTO, PICK]
    asked = srv.last_chat()['messages'][-1]['content']
    assert 'x = 6 * 7' in asked and 'boop' not in asked   # the menu and its binding stay out of the context


WIDGET_MIME = 'application/vnd.jupyter.widget-view+json'
SUGGESTION = 'print(x * 2)'
ASK_QUESTION, FOLLOW_QUESTION = 'How do I print double x?', 'What did the code print?'
CONSENT_CELLS = ['%load_ext boopiter_ext', 'x = 6 * 7', f'%%prompt\n{ASK_QUESTION}', f'%%prompt\n{FOLLOW_QUESTION}']
ASK, FOLLOW = 2, 3
SUGGEST = f'Multiply x by two inside the call to print:\n\n```python\n{SUGGESTION}\n```\n\nRun it when you are ready.'
NOTHING_RAN, SAW_IT = 'Nothing has run yet, so there is no output to read.', 'The code printed double x.'
BLOCK_OUTPUT = f"{PANEL}.content.widgets[{ASK}].node.querySelector('.boopiter-code-actions .widget-output')?.innerText.trim()"
# a whole line: the reply details hold token counts that may contain the digits
ANY_84 = (f"Array.from({PANEL}.content.node.querySelectorAll('.jp-OutputArea-output'), o => o.innerText)"
          ".some(t => /^\\s*84\\s*$/m.test(t))")


def run_cell(page, cell):
    "Make `cell` the only selected cell and run it as Ctrl+Enter does (fire and forget, like run all)."
    page.evaluate(f"""() => {{ const nb = {PANEL}.content;
        nb.mode = 'command'; nb.deselectAll(); nb.activeCellIndex = {cell};
        window.jupyterapp.commands.execute('notebook:run-cell'); }}""")


@pytest.mark.parametrize('app', ['lab', 'notebook'])
def test_consent_a_reply_s_code_runs_on_its_run_click_only_and_its_output_joins_the_context(app, page, srv, tmp_path, request):
    server = request.getfixturevalue({'lab': 'lab', 'notebook': 'nb7'}[app])
    path = write_notebook(server.root/'consent.ipynb', CONSENT_CELLS)
    srv.script(SUGGEST)
    srv.script(NOTHING_RAN)
    run_all_for_chat(page, server, srv, notebook_url(app, path.name), 2)
    until(page, server, shows(FOLLOW, NOTHING_RAN), 'second reply')
    actions = page.locator('.jp-Notebook .jp-Cell').nth(ASK).locator('.boopiter-code-actions')
    run = actions.locator('button:text-is("Run")')   # its accessible name starts with the icon's glyph
    run.wait_for()
    assert actions.locator('button:text-is("Copy to cell")').is_visible()
    assert not page.evaluate(f'() => {ANY_84}') and page.evaluate(f'() => {BLOCK_OUTPUT}') == ''   # nothing ran by itself
    assert not [m for m in srv.last_chat()['messages'] if '84' in str(m['content'])]

    run.click()
    until(page, server, f"{BLOCK_OUTPUT} === '84'", 'the block\'s output under it')
    assert page.evaluate(f'() => {ANY_84}')                              # the check above can see it
    until(page, server, f"{KERNEL_STATUS} === 'idle'", 'idle kernel after the click')
    shot = artifacts_dir(request, tmp_path)/f'{app}-consent.png'
    shot.unlink(missing_ok=True)
    page.locator('.jp-Notebook .jp-Cell').nth(ASK).locator('.jp-Cell-outputArea').screenshot(path=shot)
    check_png(shot, 300, 100, 5000)

    srv.script(SAW_IT)
    run_cell(page, FOLLOW)
    wait_for_chat(server, srv, 3)
    until(page, server, f"{KERNEL_STATUS} === 'idle' && {shows(FOLLOW, SAW_IT)}", 'reply to the re-run prompt')
    assert len(srv.chats()) == 3                                        # that cell alone ran
    asked = srv.last_chat()['messages'][-1]['content']
    at = [asked.find(s) for s in (SUGGESTION, '84', FOLLOW_QUESTION)]
    assert -1 not in at and at == sorted(at), asked                      # the clicked block and its output, then the question

    save(page)
    saved = nbformat.read(path, as_version=4)
    assert saved_reply(saved, ASK)['data']['text/plain'] == SUGGEST
    assert outputs_with(saved.cells[ASK], WIDGET_MIME)                   # the Run buttons' view


VISION_THINKER = 'qwen3-vl:2b'   # sees images and reasons: offered by the test server for one test only
PLOT = ("import matplotlib.pyplot as plt\nimport numpy as np\nx = np.linspace(0, 10, 200)\n"
        "plt.figure(figsize=(15, 5))\nplt.plot(x, np.where(x < 5, x, 10 - x))\nplt.title('a curve')\nplt.show()")
ODD = 'What is odd about this curve?'
FIGURE_CELLS = ['%load_ext boopiter_ext', PLOT, f'%%prompt -m {VISION_THINKER} --think h\n{ODD}']
FIGURE, ODD_PROMPT = 1, 2
THOUGHT = ('The figure shows one line titled a curve. It rises from zero to five, then falls back to zero. '
           'A straight rise and a straight fall meet at a sharp corner at x equals five, so the slope jumps. '
           'That corner is what the user calls odd.')
KINK, PEAK_CODE = 'a sharp corner at x = 5', 'import numpy as np\ny = np.where(x < 5, x, 10 - x)\nprint(x[y.argmax()])'
ODD_REPLY = (f'The curve has **{KINK}**: it rises as \\(y = x\\), then falls as \\(y = 10 - x\\), '
             f'so its slope jumps from 1 to -1. Find the peak:\n\n```python\n{PEAK_CODE}\n```\n\nIt prints 5.0.')
C0 = (31, 119, 180)   # matplotlib's first line colour
# the reasoning section of the prompt cell's output as it streams: its summary, and whether it is open
LIVE_REASONING = f"""i => {{ const out = {PANEL}.content.widgets[i].outputArea.node;
    const r = out.querySelector('details.boopiter-reasoning');
    return {{summary: r?.querySelector('summary').innerText, open: r?.open, done: out.innerText.includes('Reply details')}}; }}"""
ANSWER_TEXT = "o => { const a = o.cloneNode(true); a.querySelectorAll('details').forEach(d => d.remove()); return a.textContent; }"
TOKEN_COLOURS = "c => Object.fromEntries(Array.from(c.querySelectorAll('span'), s => [s.textContent, getComputedStyle(s).color]))"


def ollama_api(srv, path, body=None):
    "GET (or POST `body` to) the test server's API, as Ollama's clients do."
    req = urllib.request.Request(srv.url + path, data=body and json.dumps(body).encode(), method='POST' if body else 'GET')
    with urllib.request.urlopen(req, timeout=10) as r: return json.load(r)


@pytest.fixture
def vision_thinker(srv):
    "The session's test server also lists a vision model that reasons, until the test ends."
    model = normalize_model(dict(name=VISION_THINKER, capabilities=['completion', 'vision', 'thinking', 'tools'],
                                 context_length=262144))
    srv.models.append(model)
    try:
        assert VISION_THINKER in [m['name'] for m in ollama_api(srv, '/api/tags')['models']]
        assert {'vision', 'thinking'} <= set(ollama_api(srv, '/api/show', {'model': VISION_THINKER})['capabilities'])
        yield VISION_THINKER
    finally: srv.models.remove(model)


def sent_images(chat):
    "The images of a chat request, decoded, in message order."
    import base64, io
    from PIL import Image
    return [Image.open(io.BytesIO(base64.b64decode(i))) for m in chat['messages'] for i in m.get('images') or []]


def near(colour, target, tol=40): return sum(abs(a - b) for a,b in zip(colour, target)) <= tol


@pytest.mark.parametrize('app', ['lab', 'notebook'])
def test_vision_model_sees_the_figure_and_its_reasoning_streams_collapsed_above_a_clean_answer(
        app, page, srv, vision_thinker, tmp_path, request):
    server = request.getfixturevalue({'lab': 'lab', 'notebook': 'nb7'}[app])
    page.set_viewport_size({'width': 1280, 'height': 1600})   # the figure and the reply in one screenshot
    path = write_notebook(server.root/'curve.ipynb', FIGURE_CELLS)
    srv.script(ODD_REPLY, thinking=THOUGHT, delay=0.03)
    open_and_run_all(page, server, notebook_url(app, path.name))
    samples, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        live = page.evaluate(LIVE_REASONING, ODD_PROMPT)
        if live['done']: break
        if live['summary']: samples.append(live)
        time.sleep(0.05)
    wait_all_ran(page, server)
    words = len(THOUGHT.split())
    counts = [int(m[1]) for s in samples if (m := re.fullmatch(r'Reasoning · thinking… (\d+) words?', s['summary']))]
    assert len(set(counts)) >= 2 and counts == sorted(counts) and counts[-1] <= words, samples   # counted as it streamed
    assert not any(s['open'] for s in samples), samples                 # collapsed all along

    figure = page.locator('.jp-Notebook .jp-Cell').nth(FIGURE).locator('.jp-OutputArea-output img')
    shown = figure.evaluate('i => [i.naturalWidth, i.naturalHeight]')
    assert shown[0] > 1024, shown                                       # the figure, too wide to send as it is
    chat = srv.last_chat()
    assert len(srv.chats()) == 1 and chat['model'] == VISION_THINKER and chat['think'] in ('high', True), chat.keys()
    [image] = sent_images(chat)
    assert chat['messages'][-1].get('images') and image.format == 'PNG' and max(image.size) == 1024, image
    assert abs(image.width / image.height - shown[0] / shown[1]) < 0.01, (image.size, shown)   # scaled, not cropped
    assert any(near(c, C0) for _, c in image.convert('RGB').getcolors(1 << 24)), 'no curve in the image sent'

    out = reply_output(page, ODD_PROMPT)
    reasoning = out.locator('details.boopiter-reasoning')
    assert out.evaluate('o => o.firstElementChild.matches("details.boopiter-reasoning")')   # above the answer
    assert reasoning.evaluate('d => d.open') is False and reasoning.locator('pre').is_hidden()
    assert reasoning.locator('summary').inner_text().startswith(f'Reasoning · {words} words')
    assert reasoning.locator('pre').text_content() == THOUGHT and out.text_content().count(THOUGHT) == 1
    answer = out.evaluate(ANSWER_TEXT)
    assert KINK in answer and answer.strip().endswith('It prints 5.0.'), answer
    assert not [s for s in THOUGHT.split('. ') if s.rstrip('.') in answer], answer   # no reasoning in the answer
    assert '$' not in answer and '\\(' not in answer and '```' not in answer and '**' not in answer, answer
    assert out.locator('strong').inner_text() == KINK
    assert out.locator('mjx-container math').all_text_contents() == ['y=x', 'y=10−x']   # typeset by MathJax
    code = out.locator('pre code.language-python')
    assert code.inner_text().strip() == PEAK_CODE
    colours, plain_colour = code.evaluate(TOKEN_COLOURS), code.evaluate('c => getComputedStyle(c).color')
    assert len({colours['import'], colours['='], plain_colour}) == 3, (colours, plain_colour)   # keyword, operator, name
    details = out.locator('details:not(.boopiter-reasoning)')
    assert details.locator('summary').inner_text().startswith(f'Reply details · {VISION_THINKER} ·')
    assert details.evaluate('d => d.open') is False
    rows = details.locator('li').all_text_contents()
    assert 'Reasoning: effort high' in rows, rows
    assert f'Images: 1 sent ({image.width}×{image.height} (scaled from {shown[0]}×{shown[1]}))' in rows, rows

    shot = artifacts_dir(request, tmp_path)/f'{app}-figure-reasoning.png'
    shot.unlink(missing_ok=True)
    cells = page.locator('.jp-Notebook .jp-Cell')
    top, bottom = cells.nth(FIGURE).bounding_box(), cells.nth(ODD_PROMPT).bounding_box()
    assert bottom['y'] + bottom['height'] <= 1600, bottom             # all of it in the viewport
    page.screenshot(path=shot, clip=dict(x=top['x'], y=top['y'], width=top['width'],
                                         height=bottom['y'] + bottom['height'] - top['y']))
    check_png(shot, 800, 400, 20000)

    reasoning.locator('summary').click()                                 # the user opens it: the reasoning, in full
    assert reasoning.locator('pre').inner_text() == THOUGHT
    save(page)
    reply = saved_reply(nbformat.read(path, as_version=4), ODD_PROMPT)
    assert reply['data']['text/plain'] == ODD_REPLY                      # the answer alone, as the next prompt reads it
    assert reply['metadata']['boopiter']['images'] == [f'{image.width}×{image.height}']
