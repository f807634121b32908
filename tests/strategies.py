"""Hypothesis strategies for the untrusted text boopiter parses: model Markdown, tool-call blocks, settings files, JSON.

Generic text finds little: the bypasses found so far each needed one awkward atom (a line separator that Python
splits on and CommonMark does not, a fence inside a block quote). So every strategy here draws from tables of those
atoms, and `tests/markdown_corpus.py`'s hostile atoms are reused, not copied.

    @given(markdown_docs())          # block structure: quotes, list items, fences, HTML blocks, lazy lines, deep nesting
    @given(hostile_markdown())       # that, plus HTML, obfuscated `javascript:` URLs and every awkward character
    @given(tool_blocks())            # ```python blocks of tool calls, with literals, notebook names and refused lines
    @given(json_values())            # what a notebook, binding or cassette file may hold
"""

import string
from hypothesis import strategies as st
from markdown_corpus import ATOMS, CONTROLS, HTML, LINKS

LINE_BREAKS = ['\n', '\r\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\x85', '\u2028', '\u2029']   # to someone
ZERO_WIDTH = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff']
BIDI = ['\u061c', '\u200e', '\u200f', *map(chr, range(0x202a, 0x202f)), *map(chr, range(0x2066, 0x206a))]
AWKWARD = [*LINE_BREAKS, *ZERO_WIDTH, *BIDI, *CONTROLS, '\t', ' ', '\xa0', '\u3000', '\ufffd', '\ud800']   # a lone surrogate too

awkward_chars = st.sampled_from(AWKWARD)


def awkward_text(max_size:int=20)->st.SearchStrategy:
    "Short text mixing letters, Markdown punctuation and the awkward characters."
    return st.lists(st.one_of(awkward_chars, st.sampled_from('ab `~>-*#<&[]()!\\'),
                              st.characters(codec='utf-8')), max_size=max_size).map(''.join)


# ---- Markdown block structure: lines are container prefixes followed by a leaf's line

PREFIXES = ['>', '> ', '>\t', ' > ', '- ', '* ', '+ ', '-\t', '1. ', '2) ', '10. ', '1.  ', '-    ', ' ', '  ', '   ',
            '    ', '\t', '-', '1.']
FENCES = ['```', '~~~', '````', '```python', '```py', '``` Python3 x=1', '~~~ipython', '```python`', '```json',
          '```tool_call', '``` js', '~~~~python', '   ```python', '\t```python']
BODIES = ['f()', 'add_numbers(1, b=2)', 'x = 1', '  g()', '\tg()', 'text', 'more text', '# heading', '---', '***', '===',
          '- - -', '<div>', '</div>', '<!--', '-->', '<script>', '</script>', '<a href="x">', '<?x', '?>', '<![CDATA[',
          ']]>', '<!X', '[a]: /url', '| a | b |', '|---|---|', '']


@st.composite
def markdown_line(draw, code:bool=True)->str:
    "One line: up to three container prefixes, then a fence, a leaf's text or nothing."
    prefix = ''.join(draw(st.lists(st.sampled_from(PREFIXES), max_size=3)))
    return prefix + draw(st.sampled_from(FENCES + BODIES if code else BODIES))


@st.composite
def markdown_docs(draw, max_lines:int=12, breaks:bool=False)->str:
    "A few lines of Markdown with nested containers and fences (`breaks`: joined by any line break, awkward ones too)."
    lines = draw(st.lists(markdown_line(), min_size=1, max_size=max_lines))
    if draw(st.booleans()): lines.append(draw(deep_prefix()) + draw(st.sampled_from(FENCES)))
    seps = st.sampled_from(LINE_BREAKS) if breaks else st.sampled_from(['\n', '\n', '\n', '\r\n', '\r'])
    return ''.join(ln + draw(seps) for ln in lines)[:None if draw(st.booleans()) else -1]


def deep_prefix()->st.SearchStrategy:
    "Containers nested 50 to 70 deep (past the 64 levels any renderer shows, with a list item counting two)."
    return st.tuples(st.sampled_from(['>', '> ', '- ', '1. ', '> - ']), st.integers(20, 70)).map(lambda t: t[0] * t[1])


@st.composite
def fenced_python(draw)->str:
    "A python fence with its code, in a container or not: the shapes a model's tool call comes in."
    prefix = draw(st.sampled_from(['', '> ', '- ', '1. ', '> - ', '>> ']))
    rest = draw(st.sampled_from(['', '  ', '   ', '> ']))   # what the next lines start with: right, or not
    code = draw(st.lists(st.sampled_from(['f()', 'add_numbers(1, b=2)', 'x()', '']), min_size=1, max_size=3))
    lines = [prefix + draw(st.sampled_from(['```python', '~~~py', '````python'])), *(rest + c for c in code), rest + '````']
    return '\n'.join(lines) + '\n'


# ---- hostile Markdown: HTML, disguised `javascript:` URLs, the corpus's atoms and every awkward character

def _entity(c, how):   # the last three: no `;` (a browser decodes it anyway), and `&` escaped for Markdown
    return [c, f'&#{ord(c)};', f'&#x{ord(c):x};', f'&#X{ord(c):02X};', f'&#000{ord(c)};', f'&#x{ord(c):x}',
            f'\\&#{ord(c)};', f'&amp;#x{ord(c):x};'][how]


@st.composite
def js_url(draw)->str:
    "`javascript:` disguised: mixed case, entities for letters and the colon, whitespace and controls around and in it."
    word = ''.join(draw(st.sampled_from([c, c.upper()])) for c in 'javascript')
    word = ''.join(_entity(c, draw(st.integers(0, 7))) if draw(st.integers(0, 4)) == 0 else c for c in word)
    inner = st.sampled_from(['', '\t', '\n', '\r', '&Tab;', '&NewLine;', '\x00', ' '])
    word = ''.join(c + draw(inner) if draw(st.integers(0, 6)) == 0 else c for c in word)
    lead = draw(st.sampled_from(['', ' ', '\x01', '\x1f', '&#32;', '%20', '\u200b']))
    colon = st.sampled_from([':', '&colon;', '&#58;', '&#x3a;', '&#58', '\\&colon;', '&amp;colon;', '&amp;#58;', '%3A'])
    return lead + word + draw(colon) + 'alert(1)'


@st.composite
def js_link(draw)->str:
    "A disguised `javascript:` URL in each place Markdown or HTML takes a destination."
    u = draw(js_url())
    return draw(st.sampled_from([f'[x]({u})', f'[x](<{u}>)', f'![x]({u})', f'<{u}>', f'[x][r]\n\n[r]: {u}',
                                 f'<a href="{u}">x</a>', f"<img src='{u}'>", f'[x]({u} "t")', u]))


hostile_atoms = st.one_of(st.sampled_from(ATOMS), st.sampled_from(HTML + LINKS), js_link(), awkward_chars,
                          markdown_line(), fenced_python(), deep_prefix())


@st.composite
def hostile_markdown(draw, max_atoms:int=14)->str:
    "Atoms that broke or could break a sanitizer, joined by nothing, a line break of any kind or an awkward character."
    parts = draw(st.lists(st.tuples(hostile_atoms, st.one_of(st.just(''), awkward_chars, st.sampled_from(LINE_BREAKS))),
                          min_size=1, max_size=max_atoms))
    return ''.join(a + b for a,b in parts)


# ---- tool-call blocks

NAMES = ['add_numbers', 'create_ticket', 'annotated', 'report', 'unknown_tool', 'print', 'open']
literals = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=False),
                                  st.text(st.characters(codec='utf-8'), max_size=8), st.binary(max_size=4)),
                        lambda c: st.one_of(st.lists(c, max_size=3), st.tuples(c, c),
                                            st.dictionaries(st.text(string.ascii_letters, max_size=3), c, max_size=3)),
                        max_leaves=6)


@st.composite
def tool_call(draw, names=NAMES, variables=('df', 'label'))->str:
    "One call line: a name, positional and keyword arguments that are literals or notebook variable names."
    arg = st.one_of(literals.map(repr), st.sampled_from(variables))
    args = draw(st.lists(arg, max_size=3))
    kws = draw(st.dictionaries(st.sampled_from(['a', 'b', 'title', 'severity', 'n']), arg, max_size=2))
    return f'{draw(st.sampled_from(names))}({", ".join(args + [f"{k}={v}" for k,v in kws.items()])})'


REFUSED = ['import os', 'x = add_numbers(1)', 'os.system("x")', 'add_numbers(*a)', 'add_numbers(**k)', '__import__("os")',
           'add_numbers(len("x"))', 'for i in []: add_numbers(i)', 'add_numbers(1) + 1', 'lambda: 0', 'add_numbers(f"{x}")',
           'add_numbers(a=1, a=2)', 'add_numbers(', 'x', 'add_numbers([1, df])', 'await add_numbers(1)', 'del x',
           'add_numbers(x.y)', 'add_numbers(df[0])', '(yield)', 'add_numbers(__builtins__)']


@st.composite
def tool_blocks(draw, refused:bool=True)->str:
    "The code of a python block: call lines, maybe one line the planner must refuse, blank lines and comments."
    lines = draw(st.lists(st.one_of(tool_call(), st.sampled_from(['', '# a comment', '   '])), min_size=1, max_size=6))
    if refused and draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(REFUSED)))
    return draw(st.sampled_from(['\n', '\r\n', ';'])).join(lines) + draw(st.sampled_from(['', '\n']))


# ---- JSON as a file may hold it

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), awkward_text(12),
                         st.sampled_from(['', 'on', 'off', 'qwen3:1.7b', 'ollama_chat/x', '5m', 'h', 'none', '-1',
                                          '2026-01-01T00:00:00+00:00', '9999-12-31T23:59:59-23:59', 'sha256:ab']))


def json_values(max_leaves:int=20)->st.SearchStrategy:
    "Anything JSON can hold (NaN, huge numbers and lone surrogates included), nested a few levels."
    keys = st.one_of(awkward_text(6), json_scalars.map(str))
    return st.recursive(json_scalars, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(keys, c, max_size=4)),
                        max_leaves=max_leaves)


def json_objects(keys, values=None)->st.SearchStrategy:
    "Dicts that mostly use the known `keys` (with any JSON value) and sometimes other keys."
    values = values or json_values(8)
    return st.dictionaries(st.one_of(st.sampled_from(list(keys)), awkward_text(6)), values, max_size=len(keys) + 2)
