"""In the real frontends: JupyterLab 4 and Notebook 7 in headless Chromium (playwright), against the test server.

A notebook is run as a user would run it (run all), the reply streams into the prompt cell and renders in the
extension's reply view, the saved file holds the exact reply, and the model saw the notebook in its order. A model
picked in the brain menu is saved in the notebook's metadata and answers after a page reload, a kernel restart and
Run All. A figure reaches a vision model and its reasoning streams collapsed above the answer, and stays open once
the user opens it. A reply's code runs only on the user's click (Insert and run), as a real cell.
Harness: tests/browser.py. Set BOOPITER_ARTIFACTS to keep the screenshots.
"""

import json, re
import pytest
from browser import (KERNEL, KERNEL_STATUS, check_png, MENU_BUTTON, MENU_PHASE, MENU_PANEL, OUTPUT_TEXTS, PANEL,
                     REPLY_MIME, answering, auto_model, both_apps, cells, clear_counts, in_both_themes, load_from_menu, open_menu, open_notebook,
                     read, record, recorded, reply, reply_done, run_all, run_cell, save, saved_reply,
                     until, until_answering, wait_all_ran, wait_for_chat, write_notebook)
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)
from ollama_server import normalize_model

pytestmark = pytest.mark.slow
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
# what the reply view shows as it streams: its status, its body's text, whether its live line (with Stop) shows
LIVE = """c => { const r = c.querySelector('.boop-Reply');
    if (!r) return null;
    if (!c.__firstReply) c.__firstReply = r;
    return {status: r.dataset.boopStatus, text: r.querySelector('.boop-Reply-body').innerText.trim(),
            stop: !r.querySelector('.boop-Reply-live').hidden, outputs: c.querySelectorAll('.boop-Reply').length,
            same: c.__firstReply === r}; }"""


@both_apps
def test_a_reply_streams_renders_and_saves_with_the_notebook_as_context(app, page, srv, artifacts):
    path = write_notebook(app.root/'analysis.ipynb', CELLS)
    srv.script(REPLY, delay=0.03)
    open_notebook(page, app, path.name)
    record(page, PROMPT_CELL, LIVE)
    run_all(page, app)
    until(page, app, reply_done(PROMPT_CELL), 'the reply rendered')
    wait_all_ran(page, app)
    samples = [s for s in recorded(page) if s]
    assert all(s['outputs'] == 1 and s['same'] for s in samples), samples   # one display, updated in place
    streaming = [s for s in samples if s['status'] == 'streaming' and s['text']]
    steps = [s['text'] for i,s in enumerate(streaming) if i == 0 or s['text'] != streaming[i-1]['text']]
    out = reply(page, PROMPT_CELL)
    final = out.locator('.boop-Reply-body').inner_text().strip()
    assert len(steps) >= 3, steps                                        # streamed in several steps, not one lump
    grown = [len(re.sub(r'[*`]', '', s)) for s in steps + [final]]   # an open `**` shows until it closes
    assert all(a <= b for a,b in zip(grown, grown[1:])), '\n'.join(map(repr, steps))   # each one longer
    assert len(steps[0]) < len(final) / 2 and all(s.split()[0] == 'The' for s in steps)   # from the start
    assert all(s['stop'] for s in streaming) and samples[-1]['status'] == 'done' and not samples[-1]['stop']
    assert out.locator('strong').inner_text() == BOLD
    assert out.locator('.boop-Code pre code').inner_text().strip() == CODE   # a rendered code block, not a fence
    assert '**' not in final and '```' not in final and '<details' not in final
    details = out.locator('details.boop-Reply-details')
    assert details.locator('summary').inner_text().startswith(f'Reply details · {MODEL} ·')
    assert details.evaluate('d => d.open') is False and details.locator('ul').first.is_hidden()
    assert out.locator('.boop-Reply-badges').is_hidden()                # done: no badge to see
    in_both_themes(page, app, artifacts, f'{app.app}-reply',
                   lambda: cells(page).nth(PROMPT_CELL), (300, 100, 5000))

    save(page)
    saved = read(path)
    assert saved.cells[2].outputs[0]['text'] == '42\n'
    data = saved_reply(saved, PROMPT_CELL)
    assert data['output_type'] == 'display_data' and data['data']['text/plain'] == REPLY
    assert data['data'][REPLY_MIME]['status'] == 'done' and '\n\n'.join(data['data'][REPLY_MIME]['blocks']) == REPLY
    assert data['metadata']['boopiter']['model'] == MODEL and data['metadata']['boopiter']['status'] == 'done'
    asked = srv.last_chat()['messages'][-1]['content']
    at = [asked.find(s) for s in ('Multiply two numbers', 'x = 6 * 7', '42', QUESTION)]
    assert -1 not in at and at == sorted(at), asked                      # the notebook, in notebook order


WIDGET_MIMES = ('application/vnd.jupyter.widget-view+json', 'application/vnd.boopiter.widget+json')


# the hello to the comm that `%load_ext` opens goes over that comm's subshell, which JupyterLab starts after a round
# trip to the kernel: here the round trip takes 3 s, as on a loaded machine, so the prompt queued behind runs first
SLOW_SUBSHELLS = f"""() => {{ const k = {KERNEL}, make = k.requestCreateSubshell.bind(k);
    k.requestCreateSubshell = (...args) => {{ const f = make(...args);
        return {{done: f.done.then(r => new Promise(ok => setTimeout(() => ok(r), 3000)))}}; }}; }}"""


@both_apps
@pytest.mark.parametrize('subshells', ['fast', 'slow'])
def test_run_all_after_load_ext_shows_the_extension_s_reply_alone(app, page, srv, subshells):
    path = write_notebook(app.root/f'loadext-{subshells}.ipynb', ['%load_ext boopiter_ext', 'x = 6 * 7', f'%%prompt\n{QUESTION}'])
    srv.script(f'Run this:\n\n```python\n{CODE}\n```')
    open_notebook(page, app, path.name)
    if subshells == 'slow':
        until(page, app, f"{MENU_PHASE} === 'absent'", 'the menu offering to load boopiter')
        page.evaluate(SLOW_SUBSHELLS)
    run_all(page, app)
    until(page, app, reply_done(2), 'the reply rendered')
    phase_when_answered = page.evaluate(f'() => {MENU_PHASE}')
    wait_all_ran(page, app)
    save(page)
    extra = [o for o in read(path).cells[2].outputs if set(o.get('data', {})) & set(WIDGET_MIMES)]
    assert not extra and phase_when_answered == 'ready', (phase_when_answered, extra)


BOUND_CELLS = ['%load_ext boopiter_ext', 'x = 6 * 7', f'%%prompt\n{QUESTION}']
BOUND_PROMPT = 2


def binding_in_page(page):
    return page.evaluate(f"() => {PANEL}.model.getMetadata('boopiter')?.binding ?? null")


@both_apps
def test_a_model_picked_in_the_menu_is_saved_and_answers_after_reload_restart_and_run_all(app, page, srv):
    path = write_notebook(app.root/'bound.ipynb', BOUND_CELLS)
    srv.script('Auto.')
    open_notebook(page, app, path.name)
    run_all(page, app)
    wait_for_chat(app, srv, 1)
    wait_all_ran(page, app)
    until(page, app, f"{MENU_PHASE} === 'ready'", 'the menu ready')
    open_menu(page, app)
    auto = auto_model(page)                                              # nothing picked: the kernel's choice
    assert srv.last_chat()['model'] == auto
    pick = next(m for m in ('smollm2:135m', 'gemma3:4b') if m != auto)

    option = page.locator(f'{MENU_PANEL} [role="option"][data-model="{pick}"]')
    option.click()
    until(page, app, f"{PANEL}.model.getMetadata('boopiter')?.binding?.model === {json.dumps(pick)}",
          'the binding in the notebook metadata')
    until(page, app, f"document.querySelector('{MENU_PANEL} [data-model=\"{pick}\"]')?.getAttribute('aria-selected') === 'true'",
          'the pick selected in the menu')
    assert option.locator('.boop-Menu-check').inner_text() == '✓'
    until_answering(page, app, f'answering: {pick} (notebook binding)')
    # and reuse off: with it on, Run All keeps the saved reply (answered by the other model) and says so
    page.locator(f'{MENU_PANEL} [data-toggle="reuse"]').click()
    until(page, app, f"{PANEL}.model.getMetadata('boopiter')?.binding?.reuse === false", 'reuse off')
    assert page.locator(f'{MENU_BUTTON} .boop-MenuButton-label').inner_text() == pick
    assert read(path).metadata.get('boopiter') is None                   # not saved yet
    save(page)
    assert read(path).metadata['boopiter']['binding']['model'] == pick

    page.reload()                                                        # a page reload: the same kernel
    until(page, app, f"{MENU_PHASE} === 'ready'", 'the menu ready after a reload')
    assert page.locator(f'{MENU_BUTTON} .boop-MenuButton-label').inner_text() == pick
    kernel = page.evaluate(f'() => {PANEL}.sessionContext.session.kernel.id')
    page.close()
    app.api(f'api/kernels/{kernel}/restart', 'POST', {})                # restarted while no page shows it
    page = page.context.new_page()
    page.add_init_script("""new MutationObserver(() => {
        const p = document.querySelector('[data-jp-item-name="boopiter-menu"]')?.dataset.phase;
        const seen = (window.__phases ??= []);
        if (p && seen[seen.length - 1] !== p) seen.push(p); }).observe(document, {subtree: true, attributes: true,
                                                                         attributeFilter: ['data-phase']});""")
    open_notebook(page, app, path.name)
    until(page, app, f"{MENU_PHASE} === 'ready'", 'the menu ready in the restarted kernel')
    phases = page.evaluate('() => window.__phases')
    assert 'loading' in phases, phases                                   # it loaded boopiter by itself
    open_menu(page, app)
    assert answering(page).startswith(f'answering: {pick} (notebook binding)')   # no %boop, no cell run
    page.keyboard.press('Escape')

    # Run All in the new kernel: the saved reply is kept, and says which model answers now. The notebook's `reuse =
    # off` is a proposal, not your act: only the switch clicked in this kernel, `--fresh` or your own settings ask
    srv.script('Picked.')
    clear_counts(page)
    run_all(page, app)
    wait_all_ran(page, app)
    until(page, app, reply_done(BOUND_PROMPT), 'the reply rendered')
    assert f'Kept: answered by {auto}; this notebook now answers with {pick}' in reply(page, BOUND_PROMPT).inner_text()
    save(page)
    saved = read(path)
    data = saved_reply(saved, BOUND_PROMPT)
    assert data['metadata']['boopiter']['model'] == auto and data['metadata']['boopiter']['kept'] == pick
    assert saved.metadata['boopiter']['binding']['model'] == pick and saved.metadata['boopiter']['binding']['reuse'] is False
    assert [c['model'] for c in srv.chats()] == [auto]
    asked = srv.last_chat()['messages'][-1]['content']
    assert 'x = 6 * 7' in asked and 'boop' not in asked   # the menu and its binding stay out of the context


SUGGESTION = 'print(x * 2)'
ASK_QUESTION, FOLLOW_QUESTION = 'How do I print double x?', 'What did the code print?'
CONSENT_CELLS = ['x = 6 * 7', f'%%prompt\n{ASK_QUESTION}', f'%%prompt\n{FOLLOW_QUESTION}']
LOAD_CELL = '%load_ext boopiter_ext'
LOADED = [LOAD_CELL, *CONSENT_CELLS]   # the menu's Load puts the notebook's load cell at the top
ASK, FOLLOW = 2, 3
SUGGEST = f'Multiply x by two inside the call to print:\n\n```python\n{SUGGESTION}\n```\n\nRun it when you are ready.'
NOTHING_RAN, SAW_IT = 'Nothing has run yet, so there is no output to read.', 'The code printed double x.'
# a whole line: the reply details hold token counts that may contain the digits
ANY_84 = (f"Array.from({PANEL}.content.node.querySelectorAll('.jp-OutputArea-output'), o => o.innerText)"
          ".some(t => /^\\s*84\\s*$/m.test(t))")
SOURCES = f"{PANEL}.content.widgets.map(c => c.model.sharedModel.getSource())"
ERRORS = f"{PANEL}.content.widgets.flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : []).filter(o => o.output_type === 'error')"


@both_apps
def test_consent_a_reply_s_code_runs_only_on_insert_and_run_as_a_real_cell(app, page, srv):
    path = write_notebook(app.root/'consent.ipynb', CONSENT_CELLS)
    page.context.grant_permissions(['clipboard-read', 'clipboard-write'], origin=app.base)
    open_notebook(page, app, path.name)
    load_from_menu(page, app)                                            # no %load_ext: the menu puts one in
    assert page.evaluate(f'() => {SOURCES}') == LOADED
    srv.script(SUGGEST)
    srv.script(NOTHING_RAN)
    run_all(page, app)
    wait_for_chat(app, srv, 2)
    wait_all_ran(page, app)
    until(page, app, reply_done(FOLLOW), 'the second reply')
    actions = reply(page, ASK).locator('.boop-CodeActions')
    assert actions.locator('button').all_inner_texts() == ['Insert', 'Insert and run', 'Copy']
    assert page.evaluate(f'() => {SOURCES}') == LOADED                    # nothing was added,
    assert not page.evaluate(f'() => {ANY_84}')                          # nothing ran by itself
    assert not cells(page).nth(ASK).locator('.jupyter-widgets').count()  # and no widget fallback beside the reply
    assert not [m for m in srv.last_chat()['messages'] if '84' in str(m['content'])]

    actions.locator('[data-boop-action="copy"]').click()
    assert page.evaluate('() => navigator.clipboard.readText()').strip() == SUGGESTION
    actions.locator('[data-boop-action="insert"]').click()              # a new cell right below the prompt, not run
    until(page, app, f'{PANEL}.content.widgets.length === 5', 'the inserted cell')
    inserted = page.evaluate(f'() => {PANEL}.content.widgets[{ASK + 1}].model.toJSON()')
    assert inserted['cell_type'] == 'code' and inserted['source'] == SUGGESTION
    assert inserted['execution_count'] is None and inserted['outputs'] == [] and not page.evaluate(f'() => {ANY_84}')

    actions.locator('[data-boop-action="run"]').click()                 # a real cell, run by the notebook
    until(page, app, f'{PANEL}.content.widgets.length === 6 && {PANEL}.content.widgets[{ASK + 2}].model.executionCount',
          'the inserted cell run')
    until(page, app, f"({OUTPUT_TEXTS})({ASK + 2}).join('').trim() === '84'", "the run cell's output")
    assert page.evaluate(f'() => {SOURCES}') == [*LOADED[:3], SUGGESTION, SUGGESTION, LOADED[3]]   # below the first insert
    assert page.evaluate(f'() => {PANEL}.content.widgets[{ASK + 1}].model.executionCount') is None
    follow = ASK + 3
    until(page, app, f"{KERNEL_STATUS} === 'idle'", 'idle kernel after the click')

    srv.script(SAW_IT)
    run_cell(page, follow)   # its context changed (a cell ran above it): the saved reply stays, marked stale
    stale = (f"{PANEL}.content.widgets[{follow}].outputArea.node.querySelector('.boop-Reply .boop-Reply-stale')")
    until(page, app, f"!!{stale} && {KERNEL_STATUS} === 'idle'", 'the saved reply, marked stale')
    assert len(srv.chats()) == 2
    reply(page, follow).locator('.boop-Reply-stale').get_by_role('button', name='Ask again').click()   # asked on purpose
    wait_for_chat(app, srv, 3)
    until(page, app, reply_done(follow) + f" && !{stale} && {KERNEL_STATUS} === 'idle'", 'the reply to the re-run prompt')
    assert len(srv.chats()) == 3                                        # that cell alone asked
    asked = srv.last_chat()['messages'][-1]['content']
    at = [asked.find(s) for s in (SUGGESTION, '84', FOLLOW_QUESTION)]
    assert -1 not in at and at == sorted(at), asked                      # the run cell and its output, then the question

    save(page)
    page.evaluate(f'async () => {{ await {PANEL}.sessionContext.restartKernel(); }}')   # Restart + Run All
    until(page, app, f"{MENU_PHASE} === 'ready' && {KERNEL_STATUS} === 'idle'", 'boopiter back after the restart')
    clear_counts(page)
    run_all(page, app)
    wait_all_ran(page, app)
    assert page.evaluate(f'() => {ERRORS}') == []                        # no NameError: the cells stand on their own
    assert len(srv.chats()) == 3                                         # no model asked: the first prompt's
    assert reply(page, ASK).locator('.boop-Badge').all_inner_texts() == ['♻\nreused']   # reply reused and marked,
    until(page, app, f"!!{stale}", "the follow-up's reply kept, stale")   # the follow-up's kept (the cell above ran)
    save(page)
    saved = read(path)
    assert [c.source for c in saved.cells] == [*LOADED[:3], SUGGESTION, SUGGESTION, LOADED[3]]
    assert saved.cells[ASK + 2].outputs[0]['text'] == '84\n' and saved.cells[ASK + 1].outputs[0]['text'] == '84\n'
    assert saved_reply(saved, ASK)['data']['text/plain'] == SUGGEST
    assert not [o for c in saved.cells for o in c.get('outputs', []) if set(o.get('data', {})) & set(WIDGET_MIMES)]


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
REASONING = """c => { const r = c.querySelector('.boop-Reply-reasoning');
    return r && !r.hidden ? {summary: r.querySelector('summary').innerText, open: r.open,
                             answer: c.querySelector('.boop-Reply-body').innerText.trim().length,
                             status: c.querySelector('.boop-Reply').dataset.boopStatus} : null; }"""
TOKEN_COLOURS = "c => Object.fromEntries(Array.from(c.querySelectorAll('span'), s => [s.textContent, getComputedStyle(s).color]))"


def ollama_api(srv, path, body=None):
    "GET (or POST `body` to) the test server's API, as Ollama's clients do."
    import urllib.request
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


@both_apps
def test_a_vision_model_sees_the_figure_and_its_reasoning_streams_collapsed_until_opened(
        app, page, srv, vision_thinker, artifacts):
    page.set_viewport_size({'width': 1280, 'height': 1600})   # the figure and the reply in one screenshot
    path = write_notebook(app.root/'curve.ipynb', FIGURE_CELLS)
    srv.script(ODD_REPLY, thinking=THOUGHT, delay=0.04)
    open_notebook(page, app, path.name)
    record(page, ODD_PROMPT, REASONING)
    run_all(page, app)
    words = len(THOUGHT.split())
    # collapsed while the reasoning streams; the user opens it halfway, and it stays open through the updates after
    until(page, app, f"({REASONING})({PANEL}.content.widgets[{ODD_PROMPT}].node)?.summary.match(/thinking… (1[0-9]|[2-9][0-9]) words/)",
          'the reasoning halfway')
    reasoning = reply(page, ODD_PROMPT).locator('details.boop-Reply-reasoning')
    reasoning.locator('summary').click()
    until(page, app, reply_done(ODD_PROMPT), 'the reply rendered')
    wait_all_ran(page, app)
    samples = [s for s in recorded(page) if s]
    counts = [int(m[1]) for s in samples if (m := re.fullmatch(r'Reasoning · thinking… (\d+) words?', s['summary']))]
    assert len(set(counts)) >= 2 and counts == sorted(counts) and counts[-1] <= words, samples   # counted as it streamed
    opened = next(i for i,s in enumerate(samples) if s['open'])
    assert not any(s['open'] for s in samples[:opened]) and counts[0] < words, samples   # collapsed until clicked
    after = samples[opened:]
    assert all(s['open'] for s in after), after                          # kept open by every update after
    assert len({s['summary'] for s in after}) >= 2 and len({s['answer'] for s in after}) >= 3, after   # and there were some

    figure = cells(page).nth(FIGURE).locator('.jp-OutputArea-output img')
    shown = figure.evaluate('i => [i.naturalWidth, i.naturalHeight]')
    assert shown[0] > 1024, shown                                       # the figure, too wide to send as it is
    chat = srv.last_chat()
    assert len(srv.chats()) == 1 and chat['model'] == VISION_THINKER and chat['think'] in ('high', True), chat.keys()
    [image] = sent_images(chat)
    assert chat['messages'][-1].get('images') and image.format == 'PNG' and max(image.size) == 1024, image
    assert abs(image.width / image.height - shown[0] / shown[1]) < 0.01, (image.size, shown)   # scaled, not cropped
    assert any(near(c, C0) for _, c in image.convert('RGB').getcolors(1 << 24)), 'no curve in the image sent'

    out = reply(page, ODD_PROMPT)
    assert out.evaluate('r => [...r.children].filter(c => !c.hidden).map(c => c.className)')[:2] == [
        'boop-Reply-reasoning', 'boop-Reply-body jp-RenderedHTMLCommon jp-RenderedMarkdown']   # above the answer
    assert reasoning.locator('summary').inner_text().startswith(f'Reasoning · {words} words')
    assert reasoning.locator('.boop-Reply-reasoningText').inner_text() == THOUGHT   # open: the reasoning, in full
    body = out.locator('.boop-Reply-body')
    answer = body.inner_text()
    assert KINK in answer and answer.strip().endswith('It prints 5.0.'), answer
    assert not [s for s in THOUGHT.split('. ') if s.rstrip('.') in answer], answer   # no reasoning in the answer
    assert '$' not in answer and '\\(' not in answer and '```' not in answer and '**' not in answer, answer
    assert body.locator('strong').inner_text() == KINK
    until(page, app, f"{PANEL}.content.widgets[{ODD_PROMPT}].node.querySelectorAll('.boop-Reply-body mjx-container').length === 2",
          'the math typeset')
    assert body.locator('mjx-container math').all_text_contents() == ['y=x', 'y=10−x']   # typeset by MathJax
    code = body.locator('pre code.language-python')
    assert code.inner_text().strip() == PEAK_CODE
    colours, plain_colour = code.evaluate(TOKEN_COLOURS), code.evaluate('c => getComputedStyle(c).color')
    assert len({colours['import'], colours['='], plain_colour}) == 3, (colours, plain_colour)   # keyword, operator, name
    details = out.locator('details.boop-Reply-details')
    assert details.locator('summary').inner_text().startswith(f'Reply details · {VISION_THINKER} ·')
    assert details.evaluate('d => d.open') is False
    rows = details.locator('li').all_text_contents()
    assert 'Reasoning: effort high' in rows, rows
    assert f'Images: 1 sent ({image.width}×{image.height} (scaled from {shown[0]}×{shown[1]}))' in rows, rows

    reasoning.locator('summary').click()                                 # closed again for the picture
    top, bottom = cells(page).nth(FIGURE).bounding_box(), cells(page).nth(ODD_PROMPT).bounding_box()
    assert bottom['y'] + bottom['height'] <= 1600, bottom             # all of it in the viewport
    shot = artifacts/f'{app.app}-figure-reasoning.png'
    shot.unlink(missing_ok=True)
    page.screenshot(path=shot, clip=dict(x=top['x'], y=top['y'], width=top['width'],
                                         height=bottom['y'] + bottom['height'] - top['y']))
    check_png(shot, 800, 400, 20000)
    save(page)
    data = saved_reply(read(path), ODD_PROMPT)
    assert data['data']['text/plain'] == ODD_REPLY                       # the answer alone, as the next prompt reads it
    assert data['data'][REPLY_MIME]['reasoning'] == THOUGHT
    assert data['metadata']['boopiter']['images'] == [f'{image.width}×{image.height}']
