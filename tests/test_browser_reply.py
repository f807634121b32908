"""The reply renderer in the real frontends (JupyterLab 4 and Notebook 7, headless Chromium).

Saved replies render through Jupyter's sanitizer (nothing a reply holds runs, even in a trusted notebook) with their
badges at a glance; tool rounds are one collapsible line per call, marked by icon and colour; the model's headings
stay out of the table of contents; the view follows a long reply until the user scrolls away; Stop interrupts and
keeps what arrived; a notebook reopened without a kernel shows its replies and binding, never a broken widget, and
converts to Markdown with them. What a long stream costs the page (no long task; a 1 MB reply no more than twice
rendering it once) is a target, measured by `bench/page_streaming.py`. Harness: tests/browser.py.
"""

import subprocess, sys
import nbformat, pytest
from browser import (BINDING_MIME, KERNEL_STATUS, MENU_BUTTON, MENU_PANEL, MENU_PHASE, PANEL, REPLY_MIME, both_apps, cells,
                     code, in_both_themes, load_boopiter, long_markdown, open_notebook,
                     read, reply, reply_done, run_all, run_cell, save, saved_reply, screenshot, until, wait_all_ran,
                     wait_for_chat, write_notebook)
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


def reply_output(markdown, status='done', reasoning='', **extra):
    "A saved reply as the kernel saves it: the extension's data, Markdown and plain text for other frontends."
    data = dict(version=1, kind='reply', model='qwen3:1.7b', status=status, markdown=markdown, reasoning=reasoning,
                reasoning_label=f'Reasoning · {len(reasoning.split())} words' if reasoning else '',
                reasoning_streaming=False, reused=False, summary='qwen3:1.7b · 12 tokens', details=['Finish: stop'])
    data.update(extra)
    return nbformat.v4.new_output('display_data', data={REPLY_MIME: data, 'text/markdown': 'A saved reply.',
                                                          'text/plain': markdown},
                                  metadata={'boopiter': {'reply': True, 'model': 'qwen3:1.7b', 'status': status}})


HOSTILE = """## Model heading

<img src=x onerror="window.__pwned='img'"> <script>window.__pwned='script'</script>
[click me](javascript:window.__pwned='link') <a href="javascript:window.__pwned='a'">and me</a>
<svg onload="window.__pwned='svg'"><circle r="5"></circle></svg>
<iframe src="javascript:window.__pwned='iframe'"></iframe> <form action="javascript:window.__pwned='form'"><button>go</button></form>
<div onclick="window.__pwned='click'" onmouseover="window.__pwned='hover'">hover me</div>

**bold survives**
<details open ontoggle="window.__pwned='toggle'"><summary>s</summary>x</details>"""
HOSTILE_REASONING = '<img src=x onerror="window.__pwned=\'reasoning\'"> thinking'
BADGED = [  # (cell source, saved reply, the badges it shows: icon, label, tone)
    ('%%prompt\nReused?', dict(markdown='The saved answer.', reused=True), [('♻', 'reused', 'info')]),
    ('%%prompt\nStopped?', dict(markdown='The first half', status='interrupted'), [('⏹', 'interrupted', 'warn')]),
    ('%%prompt\nFailed?', dict(markdown='', status='error', note='HTTP 500 from the model server'), [('✗', 'failed', 'error')]),
    ('%%prompt\nCut off?', dict(markdown='It stopped mid', finish_reason='length'), [('✂', 'cut off', 'warn')]),
]
ACTIVE = """r => ({
    scripts: r.querySelectorAll('script, iframe, object, embed, frame').length,
    handlers: Array.from(r.querySelectorAll('*')).flatMap(e => e.getAttributeNames().filter(a => a.startsWith('on'))),
    javascript: Array.from(r.querySelectorAll('[href], [src], [action], [formaction]')).map(e =>
        e.getAttribute('href') ?? e.getAttribute('src') ?? e.getAttribute('action') ?? e.getAttribute('formaction'))
        .filter(u => /^\\s*javascript:/i.test(u)),
    headings: r.querySelectorAll('h1, h2, h3, h4, h5, h6').length,
    demoted: Array.from(r.querySelectorAll('.boop-Heading'), h => [h.dataset.level, h.innerText]),
    bold: Array.from(r.querySelectorAll('strong'), s => s.innerText)})"""
BADGES = """r => Array.from(r.querySelectorAll('.boop-Reply-badges:not([hidden]) .boop-Badge'), b => [
    b.querySelector('.boop-Badge-icon').innerText, b.querySelector('.boop-Badge-label').innerText,
    b.className.match(/boop-mod-(\\w+)/)[1], getComputedStyle(b.querySelector('.boop-Badge-icon')).color])"""


def trust(server, path):
    "Sign the notebook as its owner's, as `jupyter trust` does (in the server's own signature store)."
    out = subprocess.run([sys.executable, '-m', 'jupyter', 'trust', str(path)], env=server.env, capture_output=True, text=True)
    assert out.returncode == 0 and 'Signing notebook' in out.stdout, out


@both_apps
def test_saved_replies_render_sanitized_in_a_trusted_notebook_with_their_badges(app, page, artifacts):
    sources = ['# Notebook heading\nOur own notes.',
               code('%%prompt\nSay something hostile.', [reply_output(HOSTILE, reasoning=HOSTILE_REASONING)], 1)]
    sources += [code(src, [reply_output(**saved)], i + 2) for i,(src, saved, _) in enumerate(BADGED)]
    path = write_notebook(app.root/'saved.ipynb', sources)
    trust(app, path)                                                     # trusted: only the renderer stands guard
    open_notebook(page, app, path.name, kernel=False)
    until(page, app, f"{PANEL}.content.node.querySelectorAll('.boop-Reply').length === 5 && "
                     f"Array.from({PANEL}.content.node.querySelectorAll('.boop-Reply'), r => r.dataset.boopPending).every(p => p === '0')",
          'the saved replies rendered')
    hostile = reply(page, 1)
    for target in ('a', 'div', 'summary'):                              # a user clicks and hovers what is there
        for el in hostile.locator('.boop-Reply-body').locator(target).all(): el.click(); el.hover()
    assert page.evaluate('() => window.__pwned') is None
    active = hostile.evaluate(ACTIVE)
    assert active == dict(scripts=0, handlers=[], javascript=[], headings=0, demoted=[['2', 'Model heading']],
                          bold=['bold survives']), active
    reasoning = hostile.locator('details.boop-Reply-reasoning')
    reasoning.locator('summary').click()
    assert reasoning.locator('.boop-Reply-reasoningText').inner_text() == HOSTILE_REASONING   # shown as text
    assert not reasoning.locator('img').count()

    tones = {}
    for i,(_, saved, badges) in enumerate(BADGED):
        shown = reply(page, i + 2).evaluate(BADGES)
        assert [tuple(b[:3]) for b in shown] == badges, shown           # an icon and a word, not colour alone
        tones[badges[0][2]] = shown[0][3]
    assert len(set(tones.values())) == 3, tones                         # info, warn and error look different too
    assert reply(page, 3).locator('.boop-Reply-body').inner_text().strip() == 'The first half'   # what arrived, kept
    assert 'HTTP 500 from the model server' in reply(page, 4).inner_text()
    assert page.evaluate(f"() => {PANEL}.content.node.querySelectorAll('.boop-Reply .boop-Badge').length") == 4
    in_both_themes(page, app, artifacts, f'{app.app}-badges', lambda: page.locator('.jp-Notebook'), (600, 300, 10000))
    assert page.evaluate('() => window.__pwned') is None


TOOL_CALLS = 'Let me look.\n\n```python\nlist_variables()\nnope(1)\n```'
ANSWER = '## Summary heading\n\nYou have **x**, which is 42.'
TOOL_CELLS = ['# Notebook heading\nOur own notes.', 'x = 6 * 7', '%%prompt --auto\nWhich variables do I have? Use the tools.']
TOOLS_PROMPT = 2
TOOL_LINES = """c => Array.from(c.querySelectorAll('.boop-Tools .boop-Tool'), li => {
    const s = li.querySelector('summary'), icon = s.querySelector('.boop-Tool-icon'), st = s.querySelector('.boop-Tool-status');
    return {tone: li.className.match(/boop-mod-(\\w+)/)[1], icon: icon.innerText, call: s.querySelector('.boop-Tool-call').innerText,
            status: st.innerText, open: li.querySelector('details').open, iconColour: getComputedStyle(icon).color,
            statusColour: getComputedStyle(st).color,
            lines: s.getBoundingClientRect().height / s.querySelector('.boop-Tool-call').getBoundingClientRect().height}; })"""


@both_apps
def test_tool_rounds_are_one_line_per_call_and_the_model_s_headings_stay_out_of_the_toc(app, page, srv, artifacts):
    path = write_notebook(app.root/'tools.ipynb', TOOL_CELLS)
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    srv.script(TOOL_CALLS)
    srv.script(ANSWER)
    run_all(page, app)
    wait_for_chat(app, srv, 2)
    until(page, app, f"{PANEL}.content.widgets[{TOOLS_PROMPT}].node.querySelector('.boop-Reply[data-boop-kind=\"tool_loop\"]')",
          'the tool loop done')
    wait_all_ran(page, app)
    out = cells(page).nth(TOOLS_PROMPT)
    assert out.locator('.boop-Reply').evaluate_all('rs => rs.map(r => r.dataset.boopKind)') == [
        'reply', 'tool_round', 'reply', 'tool_loop']
    assert out.locator('.boop-Tools-head').inner_text() == 'Tool calls · round 1 · 2 calls'
    lines = out.evaluate(TOOL_LINES)
    assert [(t['tone'], t['icon'], t['call'], t['status'], t['open']) for t in lines] == [
        ('success', '✓', 'list_variables()', 'ok', False), ('error', '✗', 'nope(1)', 'unknown tool', False)], lines
    assert all(t['lines'] < 1.6 for t in lines), lines                   # one line each, collapsed
    assert lines[0]['iconColour'] != lines[1]['iconColour'] != lines[0]['statusColour'], lines   # and coloured
    first = out.locator('.boop-Tools .boop-Tool details').first
    first.locator('summary').click()                                     # open: the call and its result
    assert first.locator('.boop-Tool-source').inner_text() == 'list_variables()'
    assert 'x: int' in first.locator('.boop-Tool-result').inner_text()
    first.locator('summary').click()
    loop = out.locator('details.boop-ToolLoop')
    assert loop.locator('summary').inner_text() == 'Tool loop · stopped: answered · 2 rounds · 2 calls'
    assert loop.evaluate('d => d.open') is False
    answer = reply(page, TOOLS_PROMPT, 2)
    assert answer.locator('.boop-Reply-body').inner_text().strip() == 'Summary heading\n\nYou have x, which is 42.'
    assert answer.locator('h1, h2, h3, h4, h5, h6').count() == 0
    assert srv.chats()[1]['messages'][-1]['content'].count('x: int') == 1   # the result went back to the model
    in_both_themes(page, app, artifacts, f'{app.app}-tools', lambda: out.locator('.jp-Cell-outputArea'), (400, 150, 5000))

    if app.app == 'lab':                                                 # the table of contents (a Lab panel)
        page.evaluate("() => window.jupyterapp.commands.execute('toc:show-panel')")
        until(page, app, "Array.from(document.querySelectorAll('.jp-TableOfContents .jp-tocItem-content'), l => l.innerText)"
                         ".includes('Notebook heading')", 'the table of contents')
        toc = page.locator('.jp-TableOfContents .jp-tocItem-content').all_inner_texts()
        assert toc == ['Notebook heading'], toc                        # the reply's heading is not listed
        screenshot(page.locator('.jp-TableOfContents'), artifacts/'lab-toc-light.png', (150, 100, 2000))


FOLLOW_CELLS = ['%%prompt --fresh\nA long answer, please.', '%%prompt --fresh\nAnother long one.',
                '%%prompt --fresh\nA long one I will stop.']
FOLLOWED, SCROLLED, STOPPED = 0, 1, 2
# where the reply's end is against the scroller's viewport (the scroller as js/src/reply/follow.ts finds it)
WHERE = """r => { let s = r.parentElement;
    for (; s; s = s.parentElement) { const o = getComputedStyle(s).overflowY;
        if (/(auto|scroll|overlay)/.test(o) && s.scrollHeight > s.clientHeight) break; }
    return {top: s.scrollTop, below: r.getBoundingClientRect().bottom - s.getBoundingClientRect().bottom,
            height: r.getBoundingClientRect().height, viewport: s.clientHeight}; }"""
TWO_FRAMES = '() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))'


def streaming_taller_than(cell, px):
    return (f"(r => r?.dataset.boopStatus === 'streaming' && r.getBoundingClientRect().height > {px})"
            f"({PANEL}.content.widgets[{cell}].node.querySelector('.boop-Reply'))")


@both_apps
def test_the_view_follows_a_long_reply_until_the_user_scrolls_away_and_stop_keeps_what_arrived(app, page, srv, artifacts):
    page.set_viewport_size({'width': 1280, 'height': 720})
    path = write_notebook(app.root/'long.ipynb', FOLLOW_CELLS)
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    text = long_markdown(700, seed=3)

    srv.script(text, delay=0.004)                                        # left alone: the end stays in view
    run_cell(page, FOLLOWED)
    until(page, app, reply_done(FOLLOWED), 'the first long reply')
    page.evaluate(TWO_FRAMES)
    end = reply(page, FOLLOWED).evaluate(WHERE)
    assert end['height'] > 2 * end['viewport'] and end['top'] > end['viewport'], end   # it grew past the window
    assert end['below'] <= 24, end                                       # and its end is in view

    srv.script(text, delay=0.004)                                        # scrolled away: the view stays put
    cells(page).nth(SCROLLED).evaluate("c => c.scrollIntoView({block: 'start'})")   # the user looks at that prompt
    page.evaluate(TWO_FRAMES)
    run_cell(page, SCROLLED)
    until(page, app, streaming_taller_than(SCROLLED, 1000), 'the second reply streaming past the window')
    box = page.locator('.jp-Notebook').bounding_box()
    page.mouse.move(box['x'] + box['width'] / 2, box['y'] + 200)
    page.mouse.wheel(0, -300)
    page.evaluate(TWO_FRAMES)
    left = reply(page, SCROLLED).evaluate(WHERE)
    until(page, app, reply_done(SCROLLED), 'the second long reply')
    page.evaluate(TWO_FRAMES)
    end = reply(page, SCROLLED).evaluate(WHERE)
    assert abs(end['top'] - left['top']) <= 1, (left, end)                # where the user put it
    assert end['below'] > end['viewport'], end                           # while the reply went on below

    srv.script(text, delay=0.03)                                         # Stop: interrupted, what arrived stays
    run_cell(page, STOPPED)
    until(page, app, f"(r => r?.dataset.boopStatus === 'streaming' && r.querySelector('.boop-Reply-body').innerText.length > 200)"
                     f"({PANEL}.content.widgets[{STOPPED}].node.querySelector('.boop-Reply'))", 'the third reply streaming')
    stop = reply(page, STOPPED).locator('button.boop-Reply-stop')
    assert stop.is_visible() and stop.inner_text().strip() == 'Stop'
    stop.click()
    until(page, app, f"{PANEL}.content.widgets[{STOPPED}].node.querySelector('.boop-Reply').dataset.boopStatus === 'interrupted' && "
                     f"{KERNEL_STATUS} === 'idle'", 'the reply interrupted')
    stopped = reply(page, STOPPED)
    assert stopped.locator('.boop-Badge').inner_text().split() == ['⏹', 'interrupted']
    assert stopped.locator('.boop-Reply-live').is_hidden()
    kept = stopped.locator('.boop-Reply-body').inner_text().strip()
    assert len(kept) > 200 and not srv.streams[-1].completed, (len(kept), srv.streams[-1])
    screenshot(cells(page).nth(STOPPED).locator('.jp-Cell-outputArea'), artifacts/f'{app.app}-interrupted-light.png',
               (300, 100, 5000))
    save(page)
    data = saved_reply(read(path), STOPPED)
    assert data['metadata']['boopiter']['status'] == 'interrupted'
    assert text.startswith(data['data']['text/plain'].split('\n\n*(')[0].rstrip()[:200])   # a prefix of the reply
    assert len('\n\n'.join(data['data'][REPLY_MIME]['blocks'])) < len(text) / 2


NO_KERNEL_CELLS = ['x = 6 * 7', '%boop model smollm2:135m', '%%prompt\nWhat is x?']
NO_KERNEL_REPLY = 'x holds **42**; check it:\n\n```python\nprint(x)\n```'
BINDING_LINE = 'boopiter binding · model smollm2:135m'
BROKEN = ('Error displaying widget', 'Loading widget', 'VBox(', 'model not found')


def reopen_without_kernel(page, app):
    "Shut the notebook's kernel down, then reload the notebook from disk: its outputs drawn again, with no kernel."
    page.evaluate(f'async () => {{ await {PANEL}.sessionContext.shutdown(); await {PANEL}.context.revert(); }}')
    until(page, app, f"{MENU_PHASE} === 'nokernel' && !{PANEL}.sessionContext.session", 'no kernel')


def nbconvert_markdown(app, path):
    out = subprocess.run([sys.executable, '-m', 'jupyter', 'nbconvert', '--to', 'markdown', '--stdout', str(path)],
                         env=app.env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


@both_apps
def test_a_saved_reply_and_binding_show_without_a_kernel_and_convert_to_markdown(app, page, srv, artifacts):
    path = write_notebook(app.root/'nokernel.ipynb', NO_KERNEL_CELLS)
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    srv.script(NO_KERNEL_REPLY)
    run_all(page, app)
    wait_for_chat(app, srv, 1)
    wait_all_ran(page, app)
    until(page, app, reply_done(2), 'the reply')
    assert srv.last_chat()['model'] == 'smollm2:135m'
    save(page)
    reopen_without_kernel(page, app)
    until(page, app, reply_done(2), 'the saved reply drawn again')
    shown = page.locator('.jp-Notebook').inner_text()
    assert not [b for b in BROKEN if b in shown], shown
    assert cells(page).nth(1).locator('.boop-Binding-text').inner_text() == BINDING_LINE
    # the rendered text, waited for: read at once it was '' in one run of many (drawn, but not yet laid out)
    until(page, app, f"{PANEL}.content.widgets[2].outputArea.node.querySelector('.boop-Reply strong')?.innerText === '42'",
          'the saved reply\'s **42**')
    assert page.locator(f'{MENU_BUTTON} .boop-MenuButton-label').inner_text() == 'no kernel'
    in_both_themes(page, app, artifacts, f'{app.app}-no-kernel', lambda: page.locator('.jp-Notebook'), (500, 150, 5000))
    md = nbconvert_markdown(app, path)
    assert 'x holds **42**' in md and BINDING_LINE in md and 'VBox(' not in md, md
    saved = read(path)
    assert saved.metadata['boopiter']['binding']['model'] == 'smollm2:135m'
    assert [o['data'][BINDING_MIME]['model'] for o in saved.cells[1].outputs if BINDING_MIME in o.get('data', {})] == ['smollm2:135m']


PLACEHOLDERS = f"""() => Array.from({PANEL}.content.node.querySelectorAll('.boop-WidgetPlaceholder'), p => [
    p.dataset.boopWidget, p.innerText.trim(), p.getBoundingClientRect().height])"""


@both_apps
def test_a_notebook_made_without_the_extension_shows_placeholders_not_broken_widgets(app, page, srv, tmp_path):
    from kernels import KernelSession
    srv.script(NO_KERNEL_REPLY)
    sources = ['%load_ext boopiter_ext', '%boop model smollm2:135m', '%boop', 'x = 6 * 7', '%%prompt\nWhat is x?']
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'IPYTHONDIR': str(app.ipython_dir)}) as k:
        ran = [k.run(s, cell_id=f'c{i}') for i,s in enumerate(sources)]  # a frontend without the extension (VS Code)
    kinds = [o['data']['application/vnd.boopiter.widget+json']['kind'] for r in ran for o in r.outputs
             if 'application/vnd.boopiter.widget+json' in o.get('data', {})]
    assert all(r.status == 'ok' for r in ran) and kinds == ['menu', 'code_actions'], kinds   # the ipywidgets, tagged
    path = write_notebook(app.root/'headless.ipynb', [code(s, [nbformat.from_dict(o) for o in r.outputs], i + 1)
                                                      for i,(s, r) in enumerate(zip(sources, ran))])
    trust(app, path)                                                     # trusted: the widget manager would draw them
    md = nbconvert_markdown(app, path)
    assert 'x holds **42**' in md and BINDING_LINE in md and 'VBox(' not in md, md
    for live in (True, False):                                           # with a kernel (not theirs), and without
        if live: open_notebook(page, app, path.name)
        else: reopen_without_kernel(page, app)
        until(page, app, reply_done(4) + f" && {PANEL}.content.node.querySelectorAll('.boop-WidgetPlaceholder').length === 2",
              'the saved outputs drawn')
        shown = page.locator('.jp-Notebook').inner_text()
        assert not [b for b in BROKEN if b in shown], shown
        menu, actions = page.evaluate(PLACEHOLDERS)
        assert menu[:2] == ['menu', 'The brain menu is in the notebook toolbar\nOpen it'] and actions[:2] == ['code_actions', ''], (menu, actions)
        assert actions[2] == 0                                           # the reply above has its own actions
    page.locator('.boop-WidgetPlaceholder-open').click()                 # its button opens the toolbar's menu
    page.locator(MENU_PANEL).wait_for()
