"""Generated input for what reads a model's Markdown: the fence scanner, `python_blocks` and `safe_markdown`.

The oracle for block structure is markdown-it-py, the CommonMark parser `safe_markdown` shows replies with, reading
the text as shown (`sanitize.normalize`) and nesting as deep as it shows. Where markdown-it-py departs from the
CommonMark spec, the scanner follows the spec (checked against commonmark.js 0.31.2, the spec's reference
implementation; those cases are pinned in test_guards.py), so the documents compared here leave out what sets the
two apart: tabs (markdown-it-py counts their columns its own way in quotes and lists), link reference definitions and
a `>` after four spaces. Strategies: tests/strategies.py.
"""

import html, re
import pytest
from hypothesis import example, given, settings, strategies as st
from markdown_it import MarkdownIt
from boopiter_ext.context.build import fenced
from boopiter_ext.tools.blocks import _SHOWN, _fences, python_blocks
from boopiter_ext.render.sanitize import SafeStream, fence, normalize, safe_markdown, vet_url
from strategies import AWKWARD, awkward_text, fenced_python, hostile_markdown, js_url, markdown_docs
from test_sanitize import assert_inert, frontends, problems  # noqa: F401  (frontends is a fixture)

pytestmark = pytest.mark.corpus   # generated inputs: coverage's tracer is paused (tests/conftest.py)

SOME = settings(max_examples=300, deadline=None)
PY = ('python', 'py', 'python3', 'ipython')
MD, SHOWN = MarkdownIt('commonmark', {'maxNesting': _SHOWN}), MarkdownIt('commonmark', {'maxNesting': 2 * _SHOWN})
APART = re.compile(r'(?m)\t|\]:|^[^\n]*? {4,}>')   # where markdown-it-py and the spec part ways (see above)
replies = st.one_of(markdown_docs(breaks=True), hostile_markdown(), st.lists(fenced_python(), max_size=4).map(''.join))


def line_starts(text): return [0] + [m.end() for m in re.finditer(r'\r\n?|\n', text)]


def commonmark_fences(text)->list:
    "(language, code or None if left open, start, end or None, closed) of each fence markdown-it reads in `text`."
    src, tokens, starts = normalize(text), [], line_starts(text) + [len(text)]
    if src: MD.block.parse(src, MD, {}, tokens)
    out = []
    for t in (t for t in tokens if t.type == 'fence'):
        lines = t.content.count('\n') + (not t.content.endswith('\n') and bool(t.content))
        closed = t.map[1] - t.map[0] == lines + 2   # the opening line, the code, and a closing line
        code = '\n'.join('' if not ln.strip(' \t') else ln for ln in t.content.split('\n'))   # see `scanned`
        out.append(((t.info.split() or [''])[0].lower(), code if closed else None, starts[t.map[0]],
                    starts[t.map[1]] if closed else None, closed))
    return out


def scanned(text)->list:
    "The same from `guards._fences` (a list item's blank line is empty in a fence: markdown-it keeps its indent)."
    return [(lang, '\n'.join('' if not ln.strip(' \t') else ln for ln in code.split('\n')) if closed else None, start,
             end if closed else None, closed) for lang,code,start,end,closed,depth in _fences(text) if depth < _SHOWN]


@SOME
@given(markdown_docs(breaks=True).filter(lambda t: not APART.search(normalize(t))))
def test_fences_are_where_commonmark_reads_them(text):
    assert scanned(text) == commonmark_fences(text)
    assert python_blocks(text) == [code for lang,code,_,_,closed,depth in _fences(text)
                                   if closed and lang in PY and depth < _SHOWN]


@SOME
@given(st.one_of(replies, st.lists(st.one_of(st.sampled_from(AWKWARD), st.text(max_size=5)), max_size=30).map(''.join)))
def test_fences_lie_in_order_inside_the_text(text):
    "`recover_calls` blanks the fences out by these offsets, so they must cover lines of `text` without overlapping."
    fences, end = _fences(text), 0
    for lang, code, start, stop, closed, depth in fences:
        assert end <= start < stop <= len(text) and start in line_starts(text)
        end = stop
    assert all(isinstance(c, str) for c in python_blocks(text))


def shown_python(text)->list:
    "The code of each python fence in what `safe_markdown` shows for `text`."
    tokens = SHOWN.parse(safe_markdown(text))
    return [t.content for t in tokens if t.type == 'fence' and (t.info.split() or [''])[0].lower() in PY]


def _bare(code): return '\n'.join(ln.rstrip() for ln in code.split('\n'))   # rebuilt quotes and items drop line ends' spaces


@SOME
@given(replies.filter(lambda t: not APART.search(normalize(t))))
@example('1. ' * 33 + '\n```python\nf()\n````\n')   # nested past the parser's limit: it swallowed the fence after it
def test_every_block_that_runs_is_shown_as_python_with_its_code(text):
    shown = iter(map(_bare, shown_python(text)))
    assert all(any(code == s for s in shown) for code in map(_bare, python_blocks(text)))   # in order, each once


@SOME
@given(replies, st.data())
def test_a_reply_cut_at_a_line_end_runs_a_prefix_of_what_the_whole_reply_runs(text, data):
    cut = data.draw(st.sampled_from(line_starts(text)))
    whole, part = python_blocks(text), python_blocks(text[:cut])
    assert part == whole[:len(part)]


@SOME
@given(st.lists(st.one_of(awkward_text(30), st.sampled_from(['```', '````', '~~~', '> ```python', '  ```', '`'])),
                max_size=8).map('\n'.join))
def test_code_we_fence_comes_back_as_it_was_shown(code):
    shown = normalize(code)
    assert python_blocks(fence(code, 'python')) == [shown + ('\n' if shown and not shown.endswith('\n') else '')]
    assert python_blocks(fenced(code, 'python')) == [normalize(code.rstrip()) + '\n']
    assert python_blocks('> ' + normalize(fence(code, 'python')).replace('\n', '\n> ')) == python_blocks(fence(code, 'python'))


# ---- safe_markdown: nothing executable, whatever the model writes

@SOME
@given(hostile_markdown())
def test_hostile_markdown_renders_inert(text):
    assert_inert(safe_markdown(text))


@settings(max_examples=60, deadline=None)
@given(hostile_markdown(), st.lists(st.integers(0, 400), max_size=5))
def test_every_streaming_update_of_hostile_markdown_is_inert(text, cuts):
    stream = SafeStream()
    for c in sorted(cuts) + [len(text)]: assert_inert(stream(text[:c]))


@settings(max_examples=8, deadline=None)
@given(st.lists(hostile_markdown(max_atoms=10), min_size=25, max_size=25))
def test_hostile_markdown_renders_inert_in_lab_and_vscode(frontends, docs):
    safe = [safe_markdown(d) for d in docs]
    assert problems(frontends(safe), docs, safe)[:2] == []


def browser_scheme(href)->str:
    "The scheme a browser reads in an href: references decoded (even without `;`), C0 trimmed, tabs and newlines gone."
    u = re.sub(r'[\t\n\r]', '', html.unescape(href.replace('\\&', '&'))).strip(''.join(map(chr, range(0x21))))
    if u.startswith('//'): return 'remote'
    return m[1].lower() if (m := re.match(r'([a-zA-Z][a-zA-Z0-9+.-]*):', u)) else ''


@SOME
@given(st.one_of(js_url(), awkward_text(20), st.builds(lambda a, b: a + b, st.sampled_from(['', ' ', '//', 'http:', 'data:']),
                                                        js_url())))
def test_vet_url_lets_through_no_script_scheme(url):
    for u in (url, html.unescape(url)):   # as written, and with the entities a parser decodes
        if (href := vet_url(u)) is not None: assert browser_scheme(href) in ('', 'remote', 'http', 'https', 'mailto')
        if (src := vet_url(u, image=True)) is not None: assert browser_scheme(src) == ''
