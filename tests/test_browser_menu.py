"""The brain menu and prompt cells in the real frontends (JupyterLab 4 and Notebook 7, headless Chromium).

The menu in the notebook toolbar offers "Load boopiter" to a kernel without it and shows a kernel that has it
(configured in ipython_config.py) as ready at once; it lists every model with its capability badges and size, the
reasoning model and effort, keep-alive and context size, tools and auto-run, reuse, and a status that says which
model answers and why, and which sources are offline. Every pick lands in `metadata.boopiter.binding`, is saved
with the notebook and reaches the model's request. It fits a 1024 px window, its on/off states read in the light
and dark themes by more than colour, and it works from the keyboard. Prompt cells are inserted by the command, the
P key and the toolbar button, look distinct, edit as Markdown and save as `%%prompt`.
Harness: tests/browser.py.
"""

import json
import pytest
from browser import (KERNEL, KERNEL_STATUS, MENU_BUTTON, MENU_ITEM, MENU_PHASE, MENU_PANEL, OUTPUT_TEXTS, PANEL,
                     SERVER_MODELS, answering, auto_model, both_apps, cells, clear_counts, execute_silently,
                     load_from_menu, open_menu, open_notebook, read, reply_done, run_all, run_cell, save, screenshot,
                     set_theme, until, until_answering, wait_all_ran, wait_for_chat, write_notebook)
from browser import app, chromium, lab, nb7, page, artifacts  # noqa: F401 (fixtures)
from ollama_server import free_port

pytestmark = pytest.mark.slow
FRESH = ['# Notes\nA notebook that never used boopiter.', 'y = 21', '%%prompt\nWhat is twice y?']
FRESH_PROMPT = 2
# every model the test server lists, then the embedded one: (id, name, capabilities, size and source)
MODELS = [('', 'Default', [], 'settings, else chosen automatically'),
          ('gemma3:4b', 'gemma3:4b', ['vision'], '3.3 GB · ollama'),
          ('qwen3:1.7b', 'qwen3:1.7b', ['tools', 'thinking'], '1.4 GB · ollama'),
          ('smollm2:135m', 'smollm2:135m', [], '270.9 MB · ollama'),
          ('local/smollm2-135m', 'smollm2-135m', [], 'local')]
BADGES = {'vision': '👁️', 'tools': '🔧', 'thinking': '🧠'}
OPTIONS = f"""Array.from(document.querySelectorAll('{MENU_PANEL} [role="option"]'), o => ({{
    id: o.dataset.model, name: o.querySelector('.boop-Menu-modelName').innerText,
    caps: Array.from(o.querySelectorAll('.boop-Menu-cap'), c => [c.title, c.innerText]),
    meta: o.querySelector('.boop-Menu-modelMeta')?.innerText ?? '', selected: o.getAttribute('aria-selected'),
    mark: o.querySelector('.boop-Menu-check').innerText, offline: o.querySelector('.boop-Menu-offlineMark')?.innerText ?? ''}}))"""
SELECT = f"key => Array.from(document.querySelector(`{MENU_PANEL} select[data-pick=\"${{key}}\"]`).options, o => [o.value, o.text])"
# every on/off control of the panel: its state attribute, the visible mark beside its label, and their contrast
# with the background they are drawn on (WCAG: 4.5 for text, 3 for a graphical mark)
STATES = f"""() => {{
    const rgb = c => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
    const lum = c => {{ const [r, g, b] = rgb(c).map(v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
                       return 0.2126 * r + 0.7152 * g + 0.0722 * b; }};
    const contrast = (a, b) => {{ const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); }};
    const bgOf = e => {{ for (; e; e = e.parentElement) {{ const c = getComputedStyle(e).backgroundColor;
                                                         const n = c.match(/[\\d.]+/g);
                                                         if (n && (n.length < 4 || +n[3] > 0)) return c; }} }};
    const panel = document.querySelector('{MENU_PANEL}');
    return Array.from(panel.querySelectorAll('[aria-pressed], [aria-checked], [aria-selected]'), e => {{
        const mark = e.querySelector('.boop-Menu-mark, .boop-Menu-check'), label = e.querySelector('span:not([aria-hidden])');
        const bg = bgOf(e);
        return {{key: e.dataset.key, on: (e.getAttribute('aria-pressed') ?? e.getAttribute('aria-checked') ??
                                         e.getAttribute('aria-selected')) === 'true',
                mark: mark.innerText.trim(), markContrast: contrast(getComputedStyle(mark).color, bg),
                textContrast: contrast(getComputedStyle(label).color, bg), bg}}; }}); }}"""
# labels cut off: text that overflows its box, or the panel scrolling sideways
TRUNCATED = f"""() => {{
    const panel = document.querySelector('{MENU_PANEL}');
    const cut = Array.from(panel.querySelectorAll('*'), e => e).filter(e =>
        !(e instanceof HTMLSelectElement || e instanceof HTMLOptionElement || e.closest('svg')) &&
        [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) &&
        e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent);
    const selects = Array.from(panel.querySelectorAll('select'), s => {{
        const r = s.getBoundingClientRect(), p = panel.getBoundingClientRect();
        return r.right <= p.right + 1 && r.left >= p.left - 1; }});
    return {{cut, sideways: panel.scrollWidth > panel.clientWidth + 1, selectsInside: selects.every(Boolean)}}; }}"""


def binding(page, key):
    return page.evaluate(f"(k) => {PANEL}.model.getMetadata('boopiter')?.binding?.[k]", key)


def picked(page, app, key, value, what):
    """Wait until the notebook's metadata holds the pick (the kernel sent the new binding) and the menu waits for no
    pick (the kernel's state, which follows each binding, answered every one): what the menu shows is the kernel's."""
    until(page, app, f"JSON.stringify({PANEL}.model.getMetadata('boopiter')?.binding?.[{json.dumps(key)}]) === "
                     f"{json.dumps(json.dumps(value, separators=(',', ':')))} && "
                     f"!document.querySelector('{MENU_PANEL} .boop-Menu-pending')", what)


def control(page, key):
    return page.locator(f'{MENU_PANEL} [data-key="{key}"]')


def pressed(page, key):
    "The state and the visible mark of an on/off control."
    c = control(page, key)
    return (c.get_attribute('aria-pressed') or c.get_attribute('aria-checked') or c.get_attribute('aria-selected'),
            c.locator('.boop-Menu-mark, .boop-Menu-check').inner_text().strip())


def focused(page):
    return page.evaluate("() => document.activeElement?.dataset.key ?? document.activeElement?.className")


@both_apps
def test_the_brain_menu_loads_boopiter_offers_every_pick_and_saves_them_in_the_notebook(app, page, srv, artifacts):
    page.set_viewport_size({'width': 1024, 'height': 768})
    path = write_notebook(app.root/'fresh.ipynb', FRESH)
    open_notebook(page, app, path.name)
    until(page, app, f"{MENU_PHASE} === 'absent'", "'Load boopiter' in the toolbar")
    button = page.locator(MENU_BUTTON)
    assert button.inner_text().strip() == 'Load boopiter' and button.get_attribute('aria-expanded') == 'false'
    panel = open_menu(page, app)
    assert button.get_attribute('aria-expanded') == 'true'
    assert 'boopiter is not loaded in this kernel.' in panel.inner_text()
    screenshot(panel, artifacts/f'{app.app}-menu-absent-light.png', (200, 80, 3000))
    panel.locator('[data-action="load"]').click()                       # %load_ext, silently
    until(page, app, f"{MENU_PHASE} === 'ready'", 'boopiter loaded by the menu')
    assert page.evaluate(f"() => {PANEL}.model.getMetadata('boopiter')") == {}   # used: it loads by itself next time
    assert page.evaluate(f"() => {PANEL}.content.widgets.every(c => c.model.type !== 'code' || !c.model.executionCount)")

    until(page, app, f"document.querySelector('{MENU_PANEL} .boop-Menu-answering')", 'the status line')
    auto = auto_model(page)                                              # which model answers, and why
    size, window = {'gemma3:4b': ('3.3 GB', '131,072'), 'qwen3:1.7b': ('1.4 GB', '40,960'),
                    'smollm2:135m': ('270.9 MB', '8,192')}[auto]
    assert answering(page).endswith(f') · {window}-token context · {size} · models: 3 ollama, 1 local'), answering(page)
    assert button.locator('.boop-MenuButton-label').inner_text() == auto
    shown = page.evaluate(f'() => {OPTIONS}')
    assert [(o['id'], o['name'], [c for c,_ in o['caps']], o['meta']) for o in shown] == MODELS, shown
    assert all(icon == BADGES[c] for o in shown for c,icon in o['caps'])
    assert [(o['selected'], o['mark']) for o in shown] == [('true', '✓')] + [('false', '')] * 4
    assert page.evaluate(SELECT, 'reasoning_model') == [['', 'no reasoning model'], ['qwen3:1.7b', 'qwen3:1.7b']]
    assert [pressed(page, f'think:{v}') for v in ('', 'l', 'm', 'h')] == [('true', '✓')] + [('false', '')] * 3
    assert pressed(page, 'reasoning') == ('false', '')
    assert [t for _,t in page.evaluate(SELECT, 'keep_alive')] == ['default', 'unload after each reply', '1 min', '5 min',
                                                                  '15 min', '1 hour', 'forever']
    sizes = ['2k', '4k', '8k', '16k', '32k', '64k', '128k']                # up to what the answering model takes
    fits = sizes[:{'gemma3:4b': 7, 'qwen3:1.7b': 5, 'smollm2:135m': 3}[auto]]
    assert [t for _,t in page.evaluate(SELECT, 'context_size')] == ['auto', *fits]
    tools = page.evaluate(f"() => Array.from(document.querySelectorAll('{MENU_PANEL} input[data-tool]'), b => [b.dataset.tool, b.checked])")
    assert tools == [['kernel', True], ['files', True], ['notebook', False], ['web', False], ['pdf', False]]
    assert pressed(page, 'auto') == ('false', '') and pressed(page, 'reuse') == ('true', '✓')
    assert panel.locator('.boop-Menu-hint').inner_text() == 'offered: list_variables, show_cell, list_files, read_file, search_files'

    box = panel.bounding_box()                                           # it fits a 1024 px window, nothing cut off
    assert box['x'] >= 0 and box['y'] >= 0 and box['x'] + box['width'] <= 1024 and box['y'] + box['height'] <= 768, box
    assert page.evaluate(TRUNCATED) == {'cut': [], 'sideways': False, 'selectsInside': True}

    for dark in (False, True):                                           # readable in both themes, not by colour alone
        set_theme(page, app, dark)
        if not panel.count(): open_menu(page, app)                      # Lab's theme swap closes popups
        states = page.evaluate(STATES)
        assert len(states) == 5 + 4 + 3 and all(s['mark'] == ('✓' if s['on'] else '') for s in states), states
        poor = [(s['key'], round(s['textContrast'], 2), round(s['markContrast'], 2)) for s in states
                if s['textContrast'] < 4.5 or s['on'] and s['markContrast'] < 3]
        assert not poor, (poor, states)
        screenshot(panel, artifacts/f'{app.app}-menu-{"dark" if dark else "light"}.png', (300, 300, 10000))
    set_theme(page, app, False)
    if not panel.count(): open_menu(page, app)

    # picks with the mouse: each one is in the notebook's metadata at once (unsaved), and in the menu
    panel.locator('select[data-pick="reasoning_model"]').select_option('qwen3:1.7b')
    picked(page, app, 'reasoning_model', 'qwen3:1.7b', 'the reasoning model picked')
    control(page, 'reasoning').click()
    picked(page, app, 'reasoning', True, 'reasoning on')
    assert pressed(page, 'reasoning') == ('true', '✓')
    control(page, 'think:h').click()
    picked(page, app, 'think', 'h', 'high effort')
    assert [pressed(page, f'think:{v}') for v in ('', 'h')] == [('false', ''), ('true', '✓')]
    panel.locator('select[data-pick="keep_alive"]').select_option('5')
    picked(page, app, 'keep_alive', '5', 'keep-alive 5 min')
    panel.locator('select[data-pick="context_size"]').select_option('8192')
    picked(page, app, 'context_size', 8192, 'an 8k context')
    panel.locator('input[data-tool="notebook"]').check()
    picked(page, app, 'tools', 'kernel, files, notebook', 'the notebook tools on')
    control(page, 'auto').click()
    picked(page, app, 'auto', True, 'auto-run on')
    control(page, 'reuse').click()
    picked(page, app, 'reuse', False, 'reuse off')
    assert pressed(page, 'auto') == ('true', '✓') and pressed(page, 'reuse') == ('false', '')
    until_answering(page, app, 'answering: qwen3:1.7b (notebook binding) · reasoning · 40,960-token context')
    assert 'list_cells' in panel.locator('.boop-Menu-hint').inner_text()

    # the keyboard: Escape closes and gives the button its focus back; Enter opens on the picked model;
    # arrows move, Enter picks; Tab moves on, Space toggles; Escape again
    page.keyboard.press('Escape')
    until(page, app, f"!document.querySelector('{MENU_PANEL}') && document.activeElement === document.querySelector('{MENU_BUTTON}')",
          'the menu closed, focus on its button')
    page.keyboard.press('Enter')
    panel.wait_for()
    assert focused(page) == 'model:' and button.get_attribute('aria-expanded') == 'true'
    for key in ('ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowUp', 'ArrowDown'):
        page.keyboard.press(key)
    assert focused(page) == 'model:smollm2:135m'
    page.keyboard.press('Enter')
    picked(page, app, 'model', 'smollm2:135m', 'the model picked with Enter')
    until(page, app, f"document.activeElement?.dataset.key === 'model:smollm2:135m' && "
                     f"document.activeElement.getAttribute('aria-selected') === 'true'", 'the pick selected, still focused')
    page.keyboard.press('Tab')
    assert focused(page) == 'reasoning'
    page.keyboard.press(' ')
    picked(page, app, 'reasoning', False, 'reasoning off with Space')
    until(page, app, "document.activeElement?.dataset.key === 'reasoning' && "
                     "document.activeElement.getAttribute('aria-pressed') === 'false'", 'the toggle off, still focused')
    page.keyboard.press('Shift+Tab')
    assert focused(page) == 'model:smollm2:135m'
    page.keyboard.press('Escape')
    until(page, app, f"!document.querySelector('{MENU_PANEL}') && document.activeElement === document.querySelector('{MENU_BUTTON}')",
          'the menu closed by Escape, focus on its button')
    assert button.locator('.boop-MenuButton-label').inner_text() == 'smollm2:135m'

    # Ollama goes away: the status says which source is offline, its models are marked, the button warns
    execute_silently(page, f"import os; os.environ['OLLAMA_HOST'] = '127.0.0.1:{free_port()}'")
    panel = open_menu(page, app)
    panel.locator('[data-action="refresh"]').click()
    until(page, app, f"document.querySelector('{MENU_PANEL} .boop-Menu-offline')", 'the offline source')
    offline = panel.locator('.boop-Menu-offline').all_inner_texts()
    assert len(offline) == 1 and offline[0].startswith('⚠ offline · ollama: '), offline
    assert [(o['id'], o['offline']) for o in page.evaluate(f'() => {OPTIONS}')] == [
        ('', ''), ('gemma3:4b', '⚠ offline'), ('qwen3:1.7b', '⚠ offline'), ('smollm2:135m', '⚠ offline'),
        ('local/smollm2-135m', '')]                                       # the last good list, greyed
    assert page.locator(MENU_ITEM).evaluate("i => i.classList.contains('boop-mod-warn')")
    assert page.locator(f'{MENU_BUTTON} .boop-MenuButton-warn').is_visible()
    screenshot(page.locator(MENU_PANEL), artifacts/f'{app.app}-menu-offline-light.png', (300, 300, 10000))
    execute_silently(page, f"os.environ['OLLAMA_HOST'] = {srv.host!r}")
    page.keyboard.press('Escape')
    open_menu(page, app)                                              # opened again, it asks the offline source again
    until(page, app, f"!document.querySelector('{MENU_PANEL} .boop-Menu-offline') && "
                     f"!document.querySelector('{MENU_ITEM}').classList.contains('boop-mod-warn')", 'Ollama back')
    page.keyboard.press('Escape')

    save(page)
    saved = read(path).metadata['boopiter']['binding']
    assert {k: v for k,v in saved.items() if k != 'picked_at'} == dict(
        model='smollm2:135m', reasoning_model='qwen3:1.7b', reasoning=False, think='h', keep_alive='5', context_size=8192,
        tools='kernel, files, notebook', auto=True, reuse=False)
    srv.script('Forty-two.')
    run_cell(page, FRESH_PROMPT)
    wait_for_chat(app, srv, 1)
    until(page, app, f"{KERNEL_STATUS} === 'idle'", 'the prompt answered')
    chat = srv.last_chat()                                               # the picks, in the model's request
    assert chat['model'] == 'smollm2:135m' and chat['options']['num_ctx'] == 8192, chat
    assert chat['keep_alive'] in ('5m', 300, '300s'), chat['keep_alive']
    assert 'list_cells' in chat['messages'][0]['content']               # the notebook tools, offered


CONFIG = "c.InteractiveShellApp.extensions = ['boopiter_ext']\n"
PHASES = """new MutationObserver(() => {
    const p = document.querySelector('[data-jp-item-name="boopiter-menu"]')?.dataset.phase;
    const seen = (window.__phases ??= []);
    if (p && seen[seen.length - 1] !== p) seen.push(p); }).observe(document, {subtree: true, attributes: true,
                                                                     attributeFilter: ['data-phase']});"""


@pytest.fixture
def configured(app):
    "The server's kernels load boopiter at start (ipython_config.py), until the test ends."
    config = app.ipython_dir/'profile_default'/'ipython_config.py'
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(CONFIG)
    try: yield app
    finally: config.unlink()


@both_apps
def test_the_menu_shows_boopiter_configured_in_ipython_config_as_ready(app, configured, page, srv):
    path = write_notebook(app.root/'configured.ipynb', FRESH)
    page.add_init_script(PHASES)
    open_notebook(page, app, path.name)
    until(page, app, f"{MENU_PHASE} === 'ready'", 'the menu ready')
    phases = page.evaluate('() => window.__phases')
    assert 'absent' not in phases and 'loading' not in phases, phases   # never offered to load what is loaded
    assert page.locator(f'{MENU_BUTTON} .boop-MenuButton-label').inner_text() in SERVER_MODELS
    srv.script('Forty-two.')
    run_cell(page, FRESH_PROMPT)                                         # no %load_ext anywhere: the prompt runs
    wait_for_chat(app, srv, 1)
    until(page, app, f"{PANEL}.content.widgets[{FRESH_PROMPT}].node.querySelector('.boop-Reply')?.dataset.boopStatus === 'done'",
          'the reply')


def as_saved():
    "A notebook's metadata as the frontend saves it: the kernelspec and language_info it sets as the kernel starts."
    from ipykernel.ipkernel import IPythonKernel
    return dict(kernelspec=dict(display_name='Python 3 (ipykernel)', language='python', name='python3'),
                language_info=IPythonKernel.language_info)


@both_apps
def test_opening_a_notebook_in_a_configured_kernel_leaves_it_unmodified(app, configured, page):
    path = write_notebook(app.root/'untouched.ipynb', FRESH, as_saved())   # else the frontend itself adds them
    open_notebook(page, app, path.name)
    until(page, app, f"{MENU_PHASE} === 'ready'", 'the menu ready')
    execute_silently(page, 'pass')   # its idle comes after every message the kernel sent on connecting
    assert page.evaluate(f"() => [{PANEL}.model.dirty, {PANEL}.model.getMetadata('boopiter') ?? null]") == [False, None]


def kernel_check(page, code):
    "Run `code` silently in the page's kernel; the reply's status ('ok' or 'error')."
    return page.evaluate(f"async (code) => (await {KERNEL}.requestExecute({{code, silent: true, store_history: false}})"
                         ".done).content.status", code)


CONNECTED = "assert get_ipython().magics_manager.registry['BoopMagics'].channel.connected"
LOADED = "assert 'BoopMagics' in get_ipython().magics_manager.registry"


@both_apps
def test_a_kernel_restarted_through_the_rest_api_gets_boopiter_and_the_menu_back(app, page, srv):
    path = write_notebook(app.root/'rest-restart.ipynb', FRESH)
    open_notebook(page, app, path.name)
    load_from_menu(page, app)                                            # used now: it loads by itself in a new kernel
    assert kernel_check(page, CONNECTED) == 'ok'
    page.evaluate(f"() => {{ window.__phases = []; {PHASES} }}")
    kernel = page.evaluate(f'() => {KERNEL}.id')
    app.api(f'api/kernels/{kernel}/restart', 'POST', {})                # not from this page: no restart status here
    # The page learns of it from the new kernel's first message it sees (a new session id); the server's own
    # kernel_info request after a REST restart may be answered before the server's iopub socket reconnects, so the
    # sure one is the next message the page itself causes, as a user's next cell would: a silent `pass` each second
    # (not awaited: one sent while the kernel restarts may never be answered) until the page has seen the restart
    page.evaluate(f"() => {{ window.__nudge = setInterval(() => window.__phases.length || {KERNEL}?.requestExecute("
                  "{code: 'pass', silent: true, store_history: false}), 1000); }")
    until(page, app, f"window.__phases.length && {MENU_PHASE} === 'ready'", 'boopiter back after the restart')
    page.evaluate('() => clearInterval(window.__nudge)')
    assert page.evaluate(f'() => {KERNEL}.id') == kernel and kernel_check(page, CONNECTED) == 'ok'   # loaded anew, said hello
    srv.script('Forty-two.')
    run_cell(page, FRESH_PROMPT)
    wait_for_chat(app, srv, 1)
    until(page, app, reply_done(FRESH_PROMPT), 'the reply in the restarted kernel')


@both_apps
def test_a_notebook_s_own_load_ext_adopts_the_frontend_s_load_quietly_and_unload_ext_still_unloads(app, page, srv):
    path = write_notebook(app.root/'own-load.ipynb', ['%load_ext boopiter_ext', 'y = 21'], metadata={'boopiter': {}})
    open_notebook(page, app, path.name)
    until(page, app, f"{MENU_PHASE} === 'ready'", 'boopiter loaded by itself (the notebook used it before)')
    for restart in (False, True):                                        # and after a restart, loaded by itself again
        if restart:
            page.evaluate(f'async () => {{ await {PANEL}.sessionContext.restartKernel(); }}')
            until(page, app, f"{MENU_PHASE} === 'ready' && {KERNEL_STATUS} === 'idle'", 'boopiter back after the restart')
            clear_counts(page)
        run_all(page, app)
        wait_all_ran(page, app)
        assert page.evaluate(f'() => ({OUTPUT_TEXTS})(0)') == []        # no "already loaded ... %reload_ext"
    page.evaluate(f"async () => {{ await {KERNEL}.requestExecute({{code: '%unload_ext boopiter_ext'}}).done; }}")
    until(page, app, f"{MENU_PHASE} === 'absent'", "the menu offering 'Load boopiter' again")
    assert kernel_check(page, LOADED) == 'error'                         # unloaded, and not loaded again by itself
    assert page.evaluate(f'() => {MENU_PHASE}') == 'absent'


PROMPT_LOOK = """c => { const e = c.querySelector('.jp-InputArea-editor'), s = getComputedStyle(e);
    return {prompt: c.classList.contains('boop-PromptCell'), label: getComputedStyle(c.querySelector('.jp-InputPrompt'), '::after').content,
            border: s.borderLeftWidth + ' ' + s.borderLeftColor, background: s.backgroundColor,
            language: c.querySelector('.cm-content')?.dataset.language}; }"""
MODEL_CELLS = f"{PANEL}.content.widgets.map(c => [c.model.type, c.model.sharedModel.getSource(), c.model.mimeType])"


@both_apps
def test_prompt_cells_are_inserted_three_ways_look_distinct_and_edit_as_markdown(app, page, srv, artifacts):
    path = write_notebook(app.root/'cells.ipynb', ['# Notes', 'y = 21'])
    open_notebook(page, app, path.name)
    until(page, app, f"{MENU_PHASE} === 'absent'", 'the menu')

    def select(i):
        page.evaluate(f"(i) => {{ const nb = {PANEL}.content; nb.deselectAll(); nb.activeCellIndex = i; nb.mode = 'command'; "
                      "nb.node.focus(); }", i)

    select(0)
    page.evaluate("() => window.jupyterapp.commands.execute('boopiter:insert-prompt')")          # the command
    until(page, app, f'{PANEL}.content.widgets.length === 3', 'a prompt cell from the command')
    assert page.evaluate(f"() => [{PANEL}.content.activeCellIndex, {PANEL}.content.mode]") == [1, 'edit']
    until(page, app, f"{MENU_PHASE} === 'ready'", 'boopiter loaded by the first prompt cell')
    page.keyboard.type('What is **twice** y?')                          # the cursor waits on the second line
    page.keyboard.press('Escape')
    page.keyboard.press('p')                                             # the shortcut, in command mode
    until(page, app, f'{PANEL}.content.widgets.length === 4', 'a prompt cell from the P key')
    page.keyboard.press('Escape')
    select(3)
    page.locator('.jp-NotebookPanel-toolbar [data-jp-item-name="boopiter-insert-prompt"] button').click()   # the button
    until(page, app, f'{PANEL}.content.widgets.length === 5', 'a prompt cell from the toolbar button')
    assert page.evaluate(f'() => {MODEL_CELLS}') == [
        ['markdown', '# Notes', 'text/x-ipythongfm'], ['code', '%%prompt\nWhat is **twice** y?', 'text/x-ipythongfm'],
        ['code', '%%prompt\n', 'text/x-ipythongfm'], ['code', 'y = 21', 'text/x-ipython'],
        ['code', '%%prompt\n', 'text/x-ipythongfm']]                    # each below the active cell, Markdown mode

    prompt, code = cells(page).nth(1).evaluate(PROMPT_LOOK), cells(page).nth(3).evaluate(PROMPT_LOOK)
    assert prompt['prompt'] and prompt['label'] == '"prompt"' and prompt['language'] == 'markdown', prompt
    assert not code['prompt'] and code['label'] in ('none', 'normal', '') and code['language'] == 'python', code
    assert prompt['border'] != code['border'] and prompt['background'] != code['background'], (prompt, code)
    page.evaluate(f"() => {PANEL}.content.widgets[2].model.sharedModel.setSource('print(y)')")   # no longer a prompt
    until(page, app, f"!{PANEL}.content.widgets[2].hasClass('boop-PromptCell') && "
                     f"{PANEL}.content.widgets[2].model.mimeType === 'text/x-ipython'", 'a code cell again')
    select(1)
    for dark in (False, True):
        set_theme(page, app, dark)
        screenshot(page.locator('.jp-Notebook'), artifacts/f'{app.app}-prompt-cells-{"dark" if dark else "light"}.png',
                   (400, 150, 5000))
    set_theme(page, app, False)
    save(page)
    saved = read(path)
    assert [(c.cell_type, c.source) for c in saved.cells] == [
        ('markdown', '# Notes'), ('code', '%%prompt\nWhat is **twice** y?'), ('code', 'print(y)'), ('code', 'y = 21'),
        ('code', '%%prompt\n')]
