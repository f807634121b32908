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
import nbformat
import pytest
from browser import (BINDING_MIME, KERNEL, KERNEL_STATUS, MENU_BUTTON, MENU_ITEM, MENU_PHASE, MENU_PANEL, OUTPUT_TEXTS, PANEL,
                     SERVER_MODELS, answering, load_boopiter, auto_model, both_apps, cells, clear_counts, code, execute_silently,
                     load_from_menu, open_menu, open_notebook, read, reply_done, run_all, run_cell, save, screenshot,
                     set_theme, until, until_answering, wait_all_ran, wait_for_chat, write_notebook)
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)
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


# how each on/off control looks: on, its border, fill and text; off, its mark; and the brand colour an action is filled with
TOGGLE_LOOKS = f"""() => {{
    const out = {{}};
    for (const e of document.querySelectorAll('{MENU_PANEL} [aria-pressed], {MENU_PANEL} [aria-checked]')) {{
        const s = getComputedStyle(e), on = (e.getAttribute('aria-pressed') ?? e.getAttribute('aria-checked')) === 'true';
        out[e.dataset.key] = on ? {{bg: s.backgroundColor, border: s.borderTopColor, color: s.color, weight: s.fontWeight}}
                                : {{mark: getComputedStyle(e.querySelector('.boop-Menu-mark'), '::before').content}};
    }}
    const b = document.createElement('span');
    b.style.color = 'var(--jp-brand-color1)'; document.body.append(b); out.brand = getComputedStyle(b).color; b.remove();
    return out; }}"""


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
    screenshot(page.locator(MENU_ITEM), artifacts/f'{app.app}-menu-absent-light.png', (60, 15, 500))
    button.click()                                                       # one click: loaded, and the menu opens
    panel = page.locator(MENU_PANEL)
    until(page, app, f"{MENU_PHASE} === 'ready' && document.querySelector('{MENU_PANEL} .boop-Menu-answering')",
          'boopiter loaded by one click')
    assert button.get_attribute('aria-expanded') == 'true'
    assert page.evaluate(f"() => {PANEL}.model.getMetadata('boopiter')") == {}   # used: it loads by itself next time
    # the notebook records the load: its own %load_ext cell, above the first code cell, run (and nothing else ran)
    assert page.evaluate(f"() => {PANEL}.content.widgets.map(c => [c.model.sharedModel.getSource(), c.model.executionCount])") == [
        [FRESH[0], None], ['%load_ext boopiter_ext', 1], [FRESH[1], None], [FRESH[2], None]]
    prompt = FRESH_PROMPT + 1

    auto = auto_model(page)                                              # which model answers, and why
    size = {'gemma3:4b': '3.3 GB', 'qwen3:1.7b': '1.4 GB', 'smollm2:135m': '270.9 MB'}[auto]
    # one context, the one a request asks for (a small notebook's: 4,096), and the size once
    assert answering(page).endswith(') · 4,096-token context · models: 3 ollama, 1 local'), answering(page)
    assert answering(page).count(size) == 1, answering(page)
    assert button.locator('.boop-MenuButton-label').inner_text() == auto
    shown = page.evaluate(f'() => {OPTIONS}')
    assert [(o['id'], o['name'], [c for c,_ in o['caps']], o['meta']) for o in shown] == MODELS, shown
    assert all(icon == BADGES[c] for o in shown for c,icon in o['caps'])
    assert [(o['selected'], o['mark']) for o in shown] == [('true', '✓')] + [('false', '')] * 4
    assert page.evaluate(SELECT, 'reasoning_model') == [['', 'no reasoning model'], ['qwen3:1.7b', 'qwen3:1.7b']]
    assert [pressed(page, f'think:{v}') for v in ('', 'l', 'm', 'h')] == [('true', '✓')] + [('false', '')] * 3
    assert pressed(page, 'reasoning') == ('false', '')
    effort = page.evaluate(f"() => Array.from(document.querySelectorAll('{MENU_PANEL} [data-think]'), b => [b.disabled, b.title])")
    assert effort == [[True, 'The effort applies while reasoning is on: switch on "Use reasoning model" first']] * 4, effort
    assert [t for _,t in page.evaluate(SELECT, 'keep_alive')] == ['default', 'unload after each reply', '1 min', '5 min',
                                                                  '15 min', '1 hour', 'forever']
    sizes = ['2k', '4k', '8k', '16k', '32k', '64k', '128k']                # up to what the answering model takes
    fits = sizes[:{'gemma3:4b': 7, 'qwen3:1.7b': 5, 'smollm2:135m': 3}[auto]]
    assert [t for _,t in page.evaluate(SELECT, 'context_size')] == ['auto', *fits]
    tools = page.evaluate(f"() => Array.from(document.querySelectorAll('{MENU_PANEL} input[data-tool]'), b => [b.dataset.tool, b.checked])")
    assert tools == [['kernel', True], ['files', True], ['notebook', False], ['web', False], ['pdf', False],
                     ['nbfiles', False], ['machine', False], ['ci', False]]
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
    assert not page.evaluate(f"() => Array.from(document.querySelectorAll('{MENU_PANEL} [data-think]')).some(b => b.disabled)")
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
    # every toggle alike, and none filled like an action: on is a check, a brand edge and a shade, whichever it is
    looks = page.evaluate(TOGGLE_LOOKS)
    assert looks['reasoning'] == looks['auto'] == looks['think:h'] and looks['reasoning']['bg'] != looks['brand'], looks
    assert looks['reuse'] == {'mark': '"○"'}, looks                  # off: the empty circle of every toggle
    until_answering(page, app, 'answering: qwen3:1.7b (notebook binding) · reasoning · 8,192-token context')
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
    until(page, app, "document.activeElement?.dataset.key === 'model:smollm2:135m' && "
                     "document.activeElement.getAttribute('aria-selected') === 'true'", 'the pick selected, still focused')
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
    run_cell(page, prompt)
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
    run_cell(page, FRESH_PROMPT + 1)                                     # below the load cell the menu put in
    wait_for_chat(app, srv, 1)
    until(page, app, reply_done(FRESH_PROMPT + 1), 'the reply in the restarted kernel')


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
    until(page, app, f'{PANEL}.content.widgets.length === 4', 'a prompt cell from the command, and the load cell')
    assert page.evaluate(f"() => [{PANEL}.content.activeCellIndex, {PANEL}.content.mode]") == [2, 'edit']
    until(page, app, f"{MENU_PHASE} === 'ready'", 'boopiter loaded by the first prompt cell')
    assert page.evaluate(f'() => {PANEL}.content.widgets[1].model.executionCount') == 1   # its load cell, run
    page.keyboard.type('What is **twice** y?')                          # the cursor waits on the second line
    page.keyboard.press('Escape')
    page.keyboard.press('p')                                             # the shortcut, in command mode
    until(page, app, f'{PANEL}.content.widgets.length === 5', 'a prompt cell from the P key')
    page.keyboard.press('Escape')
    select(4)
    page.locator('.jp-NotebookPanel-toolbar [data-jp-item-name="boopiter-insert-prompt"] button').click()   # the button
    until(page, app, f'{PANEL}.content.widgets.length === 6', 'a prompt cell from the toolbar button')
    assert page.evaluate(f'() => {MODEL_CELLS}') == [
        ['markdown', '# Notes', 'text/x-ipythongfm'], ['code', '%load_ext boopiter_ext', 'text/x-ipython'],
        ['code', '%%prompt\nWhat is **twice** y?', 'text/x-ipythongfm'], ['code', '%%prompt\n', 'text/x-ipythongfm'],
        ['code', 'y = 21', 'text/x-ipython'], ['code', '%%prompt\n', 'text/x-ipythongfm']]   # one load cell, at the top

    prompt, code = cells(page).nth(2).evaluate(PROMPT_LOOK), cells(page).nth(4).evaluate(PROMPT_LOOK)
    assert prompt['prompt'] and prompt['label'] == '"prompt"' and prompt['language'] == 'markdown', prompt
    assert not code['prompt'] and code['label'] in ('none', 'normal', '') and code['language'] == 'python', code
    assert prompt['border'] != code['border'] and prompt['background'] != code['background'], (prompt, code)
    page.evaluate(f"() => {PANEL}.content.widgets[3].model.sharedModel.setSource('print(y)')")   # no longer a prompt
    until(page, app, f"!{PANEL}.content.widgets[3].hasClass('boop-PromptCell') && "
                     f"{PANEL}.content.widgets[3].model.mimeType === 'text/x-ipython'", 'a code cell again')
    select(2)
    for dark in (False, True):
        set_theme(page, app, dark)
        screenshot(page.locator('.jp-Notebook'), artifacts/f'{app.app}-prompt-cells-{"dark" if dark else "light"}.png',
                   (400, 150, 5000))
    set_theme(page, app, False)
    save(page)
    saved = read(path)
    assert [(c.cell_type, c.source) for c in saved.cells] == [
        ('markdown', '# Notes'), ('code', '%load_ext boopiter_ext'), ('code', '%%prompt\nWhat is **twice** y?'),
        ('code', 'print(y)'), ('code', 'y = 21'), ('code', '%%prompt\n')]


PROPOSAL = dict(auto=True, tools='kernel, files, web')
ASKS = 'This notebook asks for auto-run and the web tool; allowed here: kernel, files'


@both_apps
def test_the_menu_says_what_a_notebook_proposes_and_one_click_accepts_it_for_that_notebook(app, page, srv, artifacts):
    from datetime import datetime, timezone
    stamp = datetime.now(timezone.utc).isoformat(timespec='milliseconds')
    load = code('%load_ext boopiter_ext', [nbformat.v4.new_output('display_data', data={
        BINDING_MIME: dict(version=1, **PROPOSAL, picked_at=stamp), 'text/plain': 'boopiter binding'})])
    name = f'proposes-{app.app}.ipynb'   # one notebook per app: the acceptance is remembered by its path
    path = write_notebook(app.root/name, [load, 'y = 21'], metadata={'boopiter': {'binding': dict(PROPOSAL, picked_at=stamp)}})
    open_notebook(page, app, path.name)
    until(page, app, f"{MENU_PHASE} === 'ready'", 'boopiter loaded by itself (the notebook used it)')
    until(page, app, f"document.querySelector('{MENU_BUTTON} .boop-MenuButton-warn')?.hidden === false", 'the button warning')
    assert ASKS in page.locator(MENU_BUTTON).get_attribute('title')
    panel = open_menu(page, app)
    consent = panel.locator('.boop-Menu-consent')
    assert consent.locator('.boop-Menu-consentText').inner_text() == f'⚠ {ASKS}'
    assert consent.get_attribute('role') == 'alert'
    assert pressed(page, 'auto') == ('false', '')                        # proposed, not applied
    tools = f"() => Array.from(document.querySelectorAll('{MENU_PANEL} input[data-tool]'), b => [b.dataset.tool, b.checked])"
    assert page.evaluate(tools) == [['kernel', True], ['files', True], ['notebook', False], ['web', False], ['pdf', False],
                     ['nbfiles', False], ['machine', False], ['ci', False]]
    assert 'fetch_url' not in panel.locator('.boop-Menu-hint').inner_text()
    assert binding(page, 'auto') is True                                 # the notebook keeps its proposal
    screenshot(consent, artifacts/f'{app.app}-menu-consent-light.png', (200, 20, 1000))
    allow = consent.locator('[data-action="allow"]')
    assert allow.inner_text() == 'Allow for this notebook' and allow.get_attribute('title') == f'Accept it for {name} on this machine'
    allow.click()                                                        # one click
    until(page, app, f"!document.querySelector('{MENU_PANEL} .boop-Menu-consent') && "
                     f"document.querySelector('{MENU_PANEL} [data-key=\"auto\"]')?.getAttribute('aria-pressed') === 'true'",
          'the proposal accepted')
    assert page.evaluate(tools)[3] == ['web', True] and 'fetch_url' in panel.locator('.boop-Menu-hint').inner_text()
    until(page, app, f"document.querySelector('{MENU_BUTTON} .boop-MenuButton-warn')?.hidden === true", 'no warning')
    accepted = json.loads((app.tmp/'xdg'/'boopiter'/'consent.json').read_text())['notebooks']
    assert accepted[str(path.resolve())]['accepted'] == ['auto', 'web']   # remembered for this notebook on this machine
    page.keyboard.press('Escape')
    page.evaluate(f'async () => {{ await {PANEL}.sessionContext.restartKernel(); }}')   # a new kernel: still accepted
    until(page, app, f"{MENU_PHASE} === 'ready' && {KERNEL_STATUS} === 'idle'", 'boopiter back after the restart')
    panel = open_menu(page, app)
    until(page, app, f"document.querySelector('{MENU_PANEL} [data-key=\"auto\"]')?.getAttribute('aria-pressed') === 'true'",
          'auto-run applied in the new kernel')
    assert not panel.locator('.boop-Menu-consent').count()


# every word of the fault's text on one line: a word broken across lines has more than one box
BROKEN_WORDS = """box => { const out = [], walk = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode()); ) {
        for (const m of n.textContent.matchAll(/\\S+/g)) {
            const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
            const lines = new Set(Array.from(r.getClientRects(), q => Math.round(q.top)));
            if (lines.size > 1) out.push(m[0]); } }
    return out; }"""


@both_apps
def test_a_failed_prompt_and_a_successful_one_update_the_menu_and_the_toolbar_and_the_fault_reads_as_prose(
        app, page, srv, artifacts):
    page.set_viewport_size({'width': 1000, 'height': 900})               # narrow: the fault wraps over lines
    path = write_notebook(app.root/'down.ipynb', ['%load_ext boopiter_ext', '%%prompt -m qwen3:1.7b\nIs the server there?'])
    open_notebook(page, app, path.name)
    run_cell(page, 0)
    until(page, app, f"{MENU_PHASE} === 'ready'", 'boopiter loaded')
    assert not page.locator(MENU_ITEM).evaluate("i => i.classList.contains('boop-mod-warn')")
    execute_silently(page, f"import os; os.environ['OLLAMA_HOST'] = '127.0.0.1:{free_port()}'")   # Ollama goes away
    run_cell(page, 1)
    until(page, app, f"{PANEL}.content.widgets[1].model.outputs.toJSON().some(o => o.output_type === 'error') && "
                     f"{KERNEL_STATUS} === 'idle'", 'the prompt failed')
    # the toolbar says so at once, no Refresh: the kernel marked Ollama offline and told the page
    until(page, app, f"document.querySelector('{MENU_ITEM}').classList.contains('boop-mod-warn')", 'the warning')
    panel = open_menu(page, app)
    offline = panel.locator('.boop-Menu-offline')
    until(page, app, f"document.querySelector('{MENU_PANEL} .boop-Menu-offline')", 'the offline line')
    assert offline.inner_text().startswith('⚠ offline · ollama: Ollama is not reachable at') and '`' not in offline.inner_text()
    assert 'ollama serve' in offline.locator('code').all_inner_texts()   # its Markdown, drawn: code as code
    assert [(o['id'], o['offline']) for o in page.evaluate(f'() => {OPTIONS}')][1:4] == [
        ('gemma3:4b', '⚠ offline'), ('qwen3:1.7b', '⚠ offline'), ('smollm2:135m', '⚠ offline')]
    screenshot(panel, artifacts/f'{app.app}-menu-after-failed-prompt.png', (300, 300, 10000))
    page.keyboard.press('Escape')

    fault = cells(page).nth(1).locator('.boop-Fault')                   # the fault: a paragraph in its red box
    assert fault.locator('.boop-Fault-name').inner_text() == 'OllamaUnreachable'
    assert fault.locator('code').all_inner_texts()[0] == 'ollama serve' and '`' not in fault.inner_text()
    assert fault.locator('a').get_attribute('href').startswith('http://127.0.0.1:')
    assert fault.evaluate("f => f.getBoundingClientRect().height") > 30   # wrapped over lines...
    assert fault.evaluate(BROKEN_WORDS) == []                            # ...at word boundaries only
    screenshot(cells(page).nth(1).locator('.jp-Cell-outputArea'), artifacts/f'{app.app}-fault-light.png', (300, 40, 3000))

    execute_silently(page, f"os.environ['OLLAMA_HOST'] = {srv.host!r}")   # back
    srv.script('Yes, here.')
    run_cell(page, 1)
    until(page, app, reply_done(1) + f" && {KERNEL_STATUS} === 'idle'", 'the answer')
    # the answer is enough: the warning goes, and the menu lists Ollama's models as usable again
    until(page, app, f"!document.querySelector('{MENU_ITEM}').classList.contains('boop-mod-warn')", 'no warning')
    open_menu(page, app)
    assert not page.locator(f'{MENU_PANEL} .boop-Menu-offline').count()
    assert not [o for o in page.evaluate(f'() => {OPTIONS}') if o['offline']]


@both_apps
def test_an_mcp_server_is_a_source_you_turn_on_in_the_menu(app, page, srv, artifacts):
    "A server declared in the kernel: the menu lists it, off and not started; your click starts it and offers its tools."
    from pathlib import Path
    starts = app.tmp/f'mcp-starts-{app.app}.log'
    write_notebook(app.root/f'mcp-{app.app}.ipynb', ['x = 1'])
    open_notebook(page, app, f'mcp-{app.app}.ipynb')
    load_boopiter(page, app)
    execute_silently(page, f"from boopiter_ext import add_mcp_server; add_mcp_server('demo', "
                           f"{['python', str(Path(__file__).with_name('mcp_servers.py'))]!r}, "
                           f"env={{'BOOP_MCP_LOG': {str(starts)!r}}}, description='the test server')")
    panel = open_menu(page, app)
    tools = f"() => Array.from(document.querySelectorAll('{MENU_PANEL} input[data-tool]'), b => [b.dataset.tool, b.checked])"
    until(page, app, f"({tools})().at(-1)?.[0] === 'demo'", 'the demo source listed')
    assert page.evaluate(tools)[-1] == ['demo', False] and not starts.exists()   # off, and nothing started
    title = panel.locator('label:has(input[data-tool="demo"])').get_attribute('title')
    assert title.startswith('MCP server runs `python ') and title.endswith(': the test server')
    panel.locator('input[data-tool="demo"]').click()   # your click
    picked(page, app, 'tools', 'kernel, files, demo', 'the demo source on')
    for _ in range(100):   # the menu never waits for a server: it starts on a thread of its own
        if starts.exists(): break
        page.wait_for_timeout(100)
    assert len(starts.read_text().split()) == 1
    page.keyboard.press('Escape')
    panel = open_menu(page, app)
    until(page, app, f"document.querySelector('{MENU_PANEL} .boop-Menu-hint')?.textContent.includes('shout')",
          'its tools offered')
    screenshot(panel, artifacts/f'{app.app}-menu-mcp.png', (200, 20, 1000))
