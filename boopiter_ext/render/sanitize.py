r"""Model Markdown made safe to render, by whatever renders it.

A reply's Markdown is shown by renderers that trust it: JupyterLab and Notebook 7 render a live `text/markdown`
output with marked and run the HTML in it, VS Code with markdown-it, GitHub and nbconvert with their own. So the
model's text is never passed on as written, and never patched line by line. `safe_blocks` parses it once
(markdown-it-py: CommonMark, GFM tables and strikethrough, and math) and writes it out again from the tokens:

- every run of text escaped, so no parser can read a tag, an entity, a link, a block or math into it; the few
  characters that any parser might take for a line break (`\v`, `\f`, `\x1c`-`\x1e`, NEL, U+2028, U+2029) and
  other control characters (and lone surrogates, which no UTF-8 writer encodes) are replaced first, so all
  parsers agree on where lines are;
- code spans and fences re-fenced longer than any backtick run inside them, with a plain language tag;
- links and images written anew with vetted destinations: http(s), mailto and paths for links; local paths for
  images (a remote image becomes a link, never a fetch that could leak the context in its URL); others are text;
- raw HTML shown as code or escaped text, headings as bold lines (a reply's headings stay out of the notebook's
  table of contents), `\(...\)` and `\[...\]` math as `$...$` and `$$...$$` (JupyterLab, Notebook 7, VS Code
  and GitHub render those), money such as `$5` left as money.

It is written block by block: `safe_blocks` gives the top-level blocks, and each one, rendered once more on its own
(as the frontend's reply view renders it), is handed to nh3, an allow-list HTML sanitizer (Rust's ammonia): if it
would remove anything at all, the block loses its links, and failing that is shown as a plain code block. Nothing
of the reply, alone or joined (`safe_markdown`), can thus carry an element, attribute or URL the allow-list does
not name.

It never raises and costs time linear in the text for every construct: inline marks, links and lists are written
without recursion (marks nested past `INLINE_DEPTH` and blocks nested past `MAX_NESTING`, which the parser would
drop, are shown as plain text); math openers find their closers by lookup, not by scanning to the end; the
parser's own work is metered (block quotes that rescan the text, link labels that never close: past the budget,
plain text); and a text the parser itself fails on is shown as plain text.

    safe_markdown('**hi** <img src=x onerror=alert(1)>')    # '**hi** &lt;img src=x onerror=alert(1)&gt;'
    safe_blocks('# Plan\n\n- a\n- b')                       # ['**Plan**', '- a\n- b']
    stream = SafeStream()                                    # the same for a text that grows while it streams:
    stream.blocks(partial); stream.blocks(longer)            # finished blocks are rebuilt once, not per update
"""

__all__ = ['safe_markdown', 'safe_blocks', 'SafeStream', 'fence', 'inline_text', 'vet_url', 'normalize']

import gc, html, logging, re
from bisect import bisect_left
from contextlib import contextmanager
from html.parser import HTMLParser

log = logging.getLogger('boopiter_ext')

_BREAKS = re.compile('[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]')   # line breaks to Python or JavaScript, not to CommonMark
_CONTROLS = re.compile('[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f\ud800-\udfff]')   # and lone surrogates: nothing encodes them
_NEWLINES = re.compile(r'\r\n?|\n')
_ESCAPE = re.compile(r'[\\`*_\[\]<>&~|$]')      # everything that can start inline syntax, HTML, entities or math
# as entities, not `\<` or `\[`: a renderer's autolink can swallow a backslash, and marked unescapes brackets in a
# link's text before reading that text again
_ENTITY = {'<': '&lt;', '>': '&gt;', '&': '&amp;', '[': '&#91;', ']': '&#93;'}
_LINE_START = re.compile(r'^([ \t]*)([#+=-]|\d{1,9}(?=[.)]))')   # what only starts a block at a line's start
_URL = re.compile(r'(?:https?://|www\.)[^\s<>"\'`\\\[\]{}|^\x00-\x20\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f'
                  r'\ufeff\ufffd]+', re.I)   # what GFM renderers link by themselves, without invisible characters
_SCHEME = re.compile(r'^([A-Za-z][A-Za-z0-9+.-]*):')
_LANG = re.compile(r'[\w+#.-]{1,40}')
LAYOUT_BUDGET = 100_000   # lines the block quotes of one parse may scan, in all (see `_metered`)
_MATHY = re.compile(r'[\\^_=+*/<>|]|\d')        # `\[Enter\]` and `- \[ \] todo` are prose, not math
_C0 = ''.join(map(chr, range(0x21)))
_SPACE, _URLISH, _NONSPACE = re.compile(r'\s'), re.compile(r'[:.@]'), re.compile(r'\S')
_md = _check_md = _cleaner = None


def normalize(text:str)->str:
    "`text` with `\\n` line ends only, no control character or lone surrogate, and nothing a parser takes for a line break."
    return _CONTROLS.sub('\ufffd', _BREAKS.sub(' ', _NEWLINES.sub('\n', text)))


# ---- math: a markdown-it inline rule, so math is a token like code and nothing inside it is escaped

_CLOSERS = {'$$': re.compile(r'(?=\$\$)'), '$': re.compile(r'\$'), '\\)': re.compile(r'\\\)'), '\\]': re.compile(r'\\\]')}


class _MathIndex:
    """Where each thing the math rule looks for lies in one inline text, found once: an opener that never closes
    costs a lookup, not a scan to the end (`\\[a=` repeated held a kernel 46 s for 390 KB)."""
    def __init__(self, src):
        self.src, self.closers = src, {}
        self.ticks = [m.start() for m in re.finditer('`', src)]
        self.links = [m.start() for m in re.finditer(r'\]\(', src)]
        self.dollars = [m.start() for m in re.finditer(r'(?<!\\)\$', src)]   # what `body.replace('\\$', '')` keeps
        blanks = [(m.start(), m.start() + len(m[1])) for m in re.finditer(r'(?=(\n[ \t]*\n))', src)]
        self.blanks, self.blank_ends = [a for a, _ in blanks], [b for _, b in blanks]

    def closer(self, close, start, limit)->int:
        "The first `close` at or after `start` that is not escaped and ends by `limit`, or -1."
        if close not in self.closers:
            src = self.src
            self.closers[close] = [i for i in (m.start() for m in _CLOSERS[close].finditer(src))
                                   if src[i-1:i] != '\\' or src[i-2:i] == '\\\\']
        at = self.closers[close]
        k = bisect_left(at, start)
        return at[k] if k < len(at) and at[k] + len(close) <= limit else -1

    @staticmethod
    def within(at, start, end, width=1)->bool:
        "Whether something found at `at` (sorted positions), `width` characters long, lies between `start` and `end`."
        k = bisect_left(at, start)
        return k < len(at) and at[k] + width <= end

    def blank(self, start, end)->bool:
        "Whether a blank line lies between `start` and `end` (the first one after `start` ends first)."
        k = bisect_left(self.blanks, start)
        return k < len(self.blanks) and self.blank_ends[k] <= end


def _math_end(state, start, close, limit):
    "Where the math opened just before `start` closes (`close` not escaped, no blank line before it), or -1."
    index = getattr(state, 'boop_math', None)
    if index is None or index.src is not state.src: index = state.boop_math = _MathIndex(state.src)
    i = index.closer(close, start, limit)
    return -1 if i < 0 or index.blank(start, i) else i


def _math_rule(state, silent):
    "`$...$`, `$$...$$`, `\\(...\\)`, `\\[...\\]`: one `math` token (money such as `$5` is no math)."
    src, pos, end = state.src, state.pos, state.posMax
    two = src[pos:pos+2]
    if two == '$$': opener, close, display = '$$', '$$', True
    elif src[pos] == '$':
        if pos + 1 >= end or src[pos+1].isspace() or src[pos+1].isdigit(): return False
        opener, close, display = '$', '$', False
    elif two in ('\\(', '\\['): opener, close, display = two, '\\' + {'(': ')', '[': ']'}[two[1]], two == '\\['
    else: return False
    start = pos + len(opener)
    i = _math_end(state, start, close, end)
    if i < 0: return False
    index = state.boop_math   # each test below is a lookup or a scan that stops at the next opener: linear in all
    if opener == '$' and (src[i-1:i].isspace() or src[i+1:i+2].isdigit()): return False
    if (i == start or not _NONSPACE.search(src, start, i) or index.within(index.ticks, start, i)
            or index.within(index.links, start, i, 2) or src[i-1] == '\\'
            or (src[start] == '$' or index.within(index.dollars, start + 1, i))): return False
    if opener == '\\[' and not _MATHY.search(src, start, i): return False
    if not silent:
        tok = state.push('math', 'math', 0)
        tok.content, tok.markup = src[start:i], '$$' if display else '$'
    state.pos = i + len(close)
    return True


class _TooCostly(Exception):
    "Laying the text out would take the parser quadratic time: its block quotes rescan the same lines again and again."


class _Unreadable(Exception):
    "The parser itself failed on the text (markdown-it-py raises IndexError on `'> - <!--\\n>     x\\n>  '`)."


def _read(parse, *args):
    "`parse(*args)` of one of markdown-it's parsers; its own failures as `_Unreadable` (ours go on up as they are)."
    try: return parse(*args)
    except (_TooCostly, _TooCostlyInline): raise
    except Exception as e: raise _Unreadable(repr(e)[:200]) from e


class _TooCostlyInline(Exception):
    "One paragraph's inline syntax would take the parser more steps than its length allows (link labels never closed)."


def _metered(rule, budget):
    """markdown-it's block-quote rule with a meter. Each block quote it opens scans ahead to the next blank line (lazy
    lines included) before laying out what it holds, so `'> # h\nx\n' * n` costs n² line scans: 14 KB of it take
    seconds. Each quote opened adds the lines up to that blank line to the parse's count; past `budget`, `_TooCostly`.
    A line that opens no quote (the rule's own first test) costs nothing: a tight list of 500 items is no quote."""
    def blockquote(state, start, end, silent):
        pos = state.bMarks[start] + state.tShift[start]
        if not silent and state.src[pos:pos+1] == '>' and state.sCount[start] - state.blkIndent < 4:
            if not hasattr(state, 'boop_blank'):   # per parse: the next blank line at or after each line
                nxt, state.boop_scanned, state.boop_blank = state.lineMax, 0, [0] * (state.lineMax + 1)
                for i in range(state.lineMax - 1, -1, -1):
                    if state.bMarks[i] + state.tShift[i] >= state.eMarks[i]: nxt = i
                    state.boop_blank[i] = nxt
                state.boop_blank[state.lineMax] = state.lineMax
            state.boop_scanned += min(state.boop_blank[start], end) - start
            if state.boop_scanned > budget: raise _TooCostly
        return rule(state, start, end, silent)
    return blockquote


_STEPS = '_boop_steps'   # the key, in a parse's env, of what the inline text being parsed may still cost
STEPS_PER_CHAR, STEPS_MIN = 3, 2_000


def _metered_inline(parser):
    """markdown-it's inline parser with a meter. A link's or image's label is found by skipping token after token
    up to its `]`; each `[` never closed scans on (nested ones down to `maxNesting`), so `![` repeated costs about a
    millisecond a character. Every skipped token and every character tokenized counts against a budget of
    `STEPS_PER_CHAR` per character of the paragraph; past it, `_TooCostlyInline`."""
    skip, tokenize = parser.skipToken, parser.tokenize
    def spend(state, n):
        if (left := state.env.get(_STEPS)) is None: return
        left[0] -= n
        if left[0] < 0: raise _TooCostlyInline
    def metered_skip(state):
        spend(state, 1)
        return skip(state)
    def metered_tokenize(state):
        spend(state, max(1, state.posMax - state.pos))
        return tokenize(state)
    parser.skipToken, parser.tokenize = metered_skip, metered_tokenize


def _inline_rule(lenient):
    """The core rule that parses each paragraph's inline text, within its budget. Past it, `lenient` (the reading
    parser) keeps the paragraph as plain text; otherwise (the checking parser) `_TooCostlyInline` goes on up."""
    def inline(state):
        from markdown_it.token import Token
        env = state.env
        for token in state.tokens:
            if token.type != 'inline': continue
            env[_STEPS], token.children = [STEPS_PER_CHAR * len(token.content) + STEPS_MIN], []
            try: state.md.inline.parse(token.content, state.md, env, token.children)
            except _TooCostlyInline:
                if not lenient: raise
                token.children = [Token('text', '', 0, content=token.content)]
            finally: env.pop(_STEPS, None)
    return inline


def _parser():
    "The CommonMark parser (markdown-it-py, imported on first use) that reads model text, math included."
    global _md
    if _md is None: _md = _markdown_it({'html': True, 'maxNesting': MAX_NESTING}, math=True)
    return _md


def _nesting_bounded(tokenize):
    """markdown-it's block tokenizer, which at `maxNesting` skips to the end of the text, not of the container there:
    `'1. ' * 40` swallowed every block after it, a top-level code fence included. This one skips what belongs to that
    container only (its lines indented as deep as its content, and blank lines), as the nested call would have."""
    def bounded(state, start, end, *rest):
        if state.level < state.md.options.maxNesting: return tokenize(state, start, end, *rest)
        line = start
        while line < end and (state.isEmpty(line) or state.sCount[line] >= state.blkIndent): line += 1
        state.line = line
    return bounded


def _markdown_it(options, math=False, lenient=True):
    "markdown-it-py for CommonMark with GFM tables and strikethrough, metered, every link left to us."
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import blockquote
    md = MarkdownIt('commonmark', options).enable(['table', 'strikethrough'])
    md.block.tokenize = _nesting_bounded(md.block.tokenize)
    md.block.ruler.at('blockquote', _metered(blockquote, LAYOUT_BUDGET), {'alt': ['paragraph', 'reference', 'blockquote', 'list']})
    md.core.ruler.at('inline', _inline_rule(lenient))
    _metered_inline(md.inline)
    if math: md.inline.ruler.before('escape', 'math', _math_rule)
    md.validateLink = lambda url: True   # every destination reaches `vet_url` (or nh3), which decides
    return md


# ---- writing Markdown from the tokens

def _run(s, ch): return max((len(m) for m in re.findall(re.escape(ch) + '+', s)), default=0)


def fence(
    code:str,     # Any text
    lang:str='',  # Language tag; anything but a plain word is dropped
)->str:           # `code` in a fenced block no line inside can close, whatever parser reads it
    "A fenced code block around `code`, its fence longer than any backtick run in it."
    ticks = '`' * max(3, _run(code, '`') + 1)
    lang = lang if _LANG.fullmatch(lang or '') and '`' not in lang else ''
    return f'{ticks}{lang}\n{code}{"" if code.endswith(chr(10)) or not code else chr(10)}{ticks}'


def _code_span(s):
    s = s.replace('\n', ' ')
    ticks = '`' * (_run(s, '`') + 1)
    pad = ' ' if s[:1] in ('`', ' ') or s[-1:] in ('`', ' ') else ''
    return f'{ticks}{pad}{s}{pad}{ticks}'


def _text(s): return _ESCAPE.sub(lambda m: _ENTITY.get(m[0]) or '\\' + m[0], s)


def inline_text(
    s:str,  # Any text: a model's name, a note, a message that may quote a notebook
)->str:     # Markdown that shows `s` as it is, on one line, to set among other Markdown (never at a line's start)
    "Text escaped for the middle of a Markdown line: no tag, link, code, emphasis or line break can come of it."
    return _text(' '.join(normalize(str(s)).split()))


def _prose(s):
    "Escaped text in which bare URLs are links of our own (a renderer's autolinking would keep the escapes in them)."
    out, pos = [], 0
    for m in _URL.finditer(s):
        url = m[0].rstrip('.,:;!?\'"*')
        excess = url.count(')') - url.count('(')   # unbalanced closing parentheses end the sentence, not the URL
        trail = len(url) - len(url.rstrip(')'))
        if excess > 0: url = url[:len(url) - min(excess, trail)]
        if not url.lower().startswith(('http://', 'https://', 'www.')) or len(url) < 8: continue
        href = vet_url(url if '://' in url else 'http://' + url)
        if href is None: continue
        out += [_text(s[pos:m.start()]), f'[{_text(url)}](<{href}>)']
        pos = m.start() + len(url)
    return ''.join(out) + _text(s[pos:])


def vet_url(
    url:str,            # A link or image destination as the parser read it (entities decoded)
    image:bool=False,   # Whether an image would fetch it
)->str|None:            # The destination, percent-encoded to sit inside `<...>`, or None if it may not be used
    "Allow http(s) and mailto links and relative paths; images only from relative paths (a remote one is a fetch)."
    u = _as_read(url)
    # and as a browser reads it from an attribute: marked leaves `j&#x61vascript:` in an href, and a browser decodes
    # `&#x61` even without its `;` (which CommonMark needs, so the parser left it)
    if not (_allowed(u, image) and _allowed(_as_read(html.unescape(u)), image)): return None
    # `&` escaped: a parser decodes entities in destinations, so `&#x6A;avascript:` would become a scheme
    return re.sub(r'[ <>]', lambda c: f'%{ord(c[0]):02X}', u).replace('&', '\\&')


def _as_read(url): return re.sub(r'[\t\n\r]', '', url).strip(_C0)   # what browsers drop before they read the scheme


def _allowed(u, image)->bool:
    if not u or '\\' in u or any(c < ' ' or c == '\x7f' for c in u): return False
    m = _SCHEME.match(u)
    if m and m[1].lower() not in ('http', 'https', 'mailto'): return False
    return not (image and (u.startswith('//') or m))


class _Node:
    "A block of the syntax tree: the token that opens it (or is all of it), and what it holds."
    __slots__ = ('children', 'tok', 'type')
    def __init__(self, type, tok): self.type, self.tok, self.children = type, tok, []


def _tree(tokens)->list:
    "The top-level blocks of markdown-it's flat block tokens, nested without recursion (inline tokens stay flat)."
    root = _Node('root', None)
    stack = [root]
    for t in tokens:
        if t.nesting == -1:
            stack.pop()
            continue
        node = _Node(t.type[:-5] if t.nesting == 1 else t.type, t)
        stack[-1].children.append(node)
        if t.nesting == 1: stack.append(node)
    return root.children


class _TooDeep(Exception):
    "Inline marks nested deeper than `INLINE_DEPTH`: other renderers would recurse that deep."


MAX_NESTING = 64     # block nesting the reading parser follows; what it would drop deeper is shown as plain text
INLINE_DEPTH = 32    # emphasis and links nested deeper: the paragraph is shown as plain text


class _Writer:
    """Markdown from markdown-it's tokens, every piece of it escaped or vetted; inline runs are written without
    recursion, and blocks nest no deeper than `MAX_NESTING`. `lines`: the text's lines, for what the parser dropped."""
    def __init__(self, links=True, lines=()): self.in_link, self.links, self.word, self.lines = False, links, False, lines

    def blocks(self, nodes, sep='\n\n')->str:
        out, prev = [], None
        for n in nodes:
            if (s := self.block(n, prev)) is not None: out.append(s)
            prev = s
        return sep.join(out)

    def block(self, n, prev=None)->str|None:
        "Block `n` as Markdown; `prev`: the Markdown of the block before it (a list after a list takes other markers)."
        t, tok = n.type, n.tok
        if t == 'paragraph': return self.inline(n.children[0].tok) if n.children else ''
        if t == 'heading':
            if not n.children: return ''
            inline = n.children[0].tok
            inner = self.inline(inline)
            plain = not any(c.type in ('strong_open', 'em_open') for c in inline.children or ())
            return f'**{inner}**' if inner and plain else inner
        if t in ('fence', 'code_block'): return fence(tok.content, tok.info.split()[0] if tok.info.split() else '')
        if t == 'html_block': return fence(tok.content, 'html')
        if t == 'hr': return '***'
        if t == 'blockquote': return self._prefix(self._dropped(n) or self.blocks(n.children) or '', '> ', '> ')
        if t in ('bullet_list', 'ordered_list'): return self._list(n, prev)
        if t == 'table': return self._table(n)
        return None

    def _dropped(self, n)->str:
        """What markdown-it dropped of container `n`, nested as deep as it follows (it skips the rest of such a
        container: `'> ' * 70 + 'text'` lost its text), as plain text in a fence; '' if it dropped nothing."""
        if n.tok.level < MAX_NESTING - 1 or n.children or not n.tok.map: return ''
        start, end = n.tok.map
        return fence('\n'.join(self.lines[start:end]))

    @staticmethod
    def _prefix(body, first, rest):
        lines = body.split('\n')
        return '\n'.join([(first + lines[0]).rstrip()] + [(rest + ln).rstrip() for ln in lines[1:]])

    def _list(self, n, prev):
        tight = not any(p.type == 'paragraph' and not p.tok.hidden for it in n.children for p in it.children)
        m = _MARKER.match(prev or '')   # two lists in a row stay two: the second takes the other marker
        if n.type == 'ordered_list': mark = ')' if m and m[2] == '.' else '.'
        else: mark = '+' if m and m[1] == '-' else '-'
        sep, items = '\n' if tight else '\n\n', []
        start = int(n.tok.attrs.get('start', 1)) if n.type == 'ordered_list' else 0
        for k, item in enumerate(n.children):
            marker = f'{min(start + k, 999_999_999)}{mark}' if n.type == 'ordered_list' else mark
            body = self._dropped(item) or self.blocks(item.children, sep)
            items.append(self._prefix(body, marker + ' ', ' ' * (len(marker) + 1)) if body else marker)
        return sep.join(items)

    def _table(self, n):
        rows = [r for part in n.children for r in part.children]
        if not rows: return ''
        def cell(c): return self.inline(c.children[0].tok).replace('\n', ' ') if c.children else ''
        def line(r): return '| ' + ' | '.join(cell(c) for c in r.children) + ' |'
        align = {'text-align:left': ':--', 'text-align:center': ':-:', 'text-align:right': '--:'}
        head = '| ' + ' | '.join(align.get(c.tok.attrs.get('style', ''), '---') for c in rows[0].children) + ' |'
        return '\n'.join([line(rows[0]), head, *map(line, rows[1:])])

    def inline(self, tok)->str:
        "An inline run: text escaped, and at each line's start nothing that could begin a block."
        try: s = self._inline(tok.children or ())
        except _TooDeep:   # as plain text: what other renderers would recurse into, nested this deep, is a DoS
            self.in_link = False
            s = self._inline([type(tok)('text', '', 0, content=tok.content)])
        return '\n'.join(self._line(ln) for ln in s.split('\n'))

    def _inline(self, tokens)->str:
        "The flat inline tokens written out with a stack of open marks, each mark's text appended once: linear."
        self.word, out, stack, size = False, [], [], 0
        for t in tokens:
            if t.nesting == 1:
                if len(stack) >= INLINE_DEPTH: raise _TooDeep
                stack.append((t, len(out), size, self.in_link))
                self.in_link = self.in_link or t.type == 'link_open'   # no autolink inside a link
                out.append('')   # the opening mark, once known
                continue
            if t.nesting == -1:
                if not stack: continue
                opener, at, before, self.in_link = stack.pop()
                s = self._close(opener, out, at, size > before)
            else: s = self._leaf(t)
            out.append(s)
            size += len(s)
        return ''.join(out)

    def _close(self, t, out, at, inner)->str:
        "Write the opening mark of `t` at `out[at]` and return its closing one; `inner`: whether it holds any text."
        kind = t.type[:-5]
        if kind in ('em', 'strong', 's'):
            if not inner: return ''
            out[at] = {'em': '*', 'strong': '**', 's': '~~'}[kind]
            return out[at]
        if kind != 'link': return ''
        href = vet_url(t.attrs.get('href', '')) if self.links else None
        if href is None: return ''
        self.word = False   # the `<` of `(<...>)` ends any autolink
        out[at] = '['
        return f'{"" if inner else _text(href)}](<{href}>)'

    @staticmethod
    def _line(ln):
        ln = ln.strip(' \t')
        return _LINE_START.sub(lambda m: m[2][:-1] + '\\' + m[2][-1] if m[2][-1] in '#+=-' else m[2] + '\\', ln, 1)

    def _word(self, s):
        "Remember whether the text since the last space holds `:`, `.` or `@`: a renderer's autolink could run on from it."
        tail = _SPACE.split(s)
        self.word = bool(_URLISH.search(tail[-1])) or (len(tail) == 1 and self.word)
        return s

    def _leaf(self, n)->str:
        t = n.type
        if t == 'text': return self._word(_prose(n.content) if self.links and not self.in_link else _text(n.content))
        if t in ('softbreak', 'hardbreak'): self.word = False
        if t == 'softbreak': return '\n'
        if t == 'hardbreak': return '\\\n'
        if t == 'code_inline':   # autolinks (marked's, linkify's) run on past a backtick: code never touches a URL
            space, self.word = ' ' if self.word else '', False
            return space + _code_span(n.content)
        if t == 'math': return self._word(self._math(n))
        if t == 'html_inline': return self._word(_text(n.content))
        if t == 'image':
            alt = _text(n.content)
            if not self.links: return f'🖼 {alt}'
            if (src := vet_url(n.attrs.get('src', ''), image=True)) is not None: return self._word(f'![{alt}](<{src}>)')
            if (href := vet_url(n.attrs.get('src', ''))) is not None: return self._word(f'[🖼 {alt or "image"}](<{href}>)')
            return self._word(f'🖼 {alt}')
        return ''

    @staticmethod
    def _math(n):
        "Math as `$...$` or `$$...$$` on one line; `<` and `>` as TeX's `\\lt` and `\\gt`, so no parser sees a tag in it."
        body = re.sub(r'[<>]', lambda m: {'<': r'\lt ', '>': r'\gt '}[m[0]], n.content)
        return f'{n.markup}{" ".join(body.split())}{n.markup}'   # on one line: no line of it starts a block


# ---- the gate: what the rebuilt Markdown renders to must pass nh3's allow-list untouched

_TAGS = {'p', 'em', 'strong', 'code', 'pre', 'a', 'img', 'ul', 'ol', 'li', 'blockquote', 'hr', 'br', 'table',
         'thead', 'tbody', 'tr', 'th', 'td', 's', 'del', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6'}
_ATTRS = {'a': {'href'}, 'img': {'src', 'alt'}, 'code': {'class'}, 'ol': {'start'}, 'th': {'style'}, 'td': {'style'}}


class _Shape(HTMLParser):
    "Every tag, attribute and piece of text of an HTML fragment, as a comparable list."
    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.items = []
        self.feed(html)
        self.close()
        self.items = [('t', ''.join(i[1])) if i[0] == 't' else i for i in self.items]

    def handle_starttag(self, tag, attrs): self.items.append(('<', tag, sorted((k, v or '') for k,v in attrs)))
    def handle_startendtag(self, tag, attrs): self.handle_starttag(tag, attrs)
    def handle_endtag(self, tag): self.items.append(('>', tag))
    def handle_data(self, data):
        if self.items and self.items[-1][0] == 't': self.items[-1][1].append(data)
        else: self.items.append(('t', [data]))
    def handle_comment(self, data): self.items.append(('!', data))
    def handle_decl(self, decl): self.items.append(('!', decl))
    def handle_pi(self, data): self.items.append(('!', data))


def _no_fetch(tag, attr, value):
    "nh3's attribute filter: an image only from a relative path (a remote one would be fetched as the page loads)."
    return None if tag == 'img' and attr == 'src' and (value.startswith('//') or _SCHEME.match(value)) else value


def _render_check(md_text)->bool:
    """Whether `md_text`, rendered alone (CommonMark, raw HTML allowed), is HTML that nh3's allow-list leaves exactly
    as it is; Markdown the checking parser could not read within its budget does not pass."""
    global _check_md, _cleaner
    if _check_md is None:   # nesting deeper than the reading parser's: nothing of what was kept can hide from the check
        import nh3
        _check_md = _markdown_it({'html': True, 'maxNesting': 2 * MAX_NESTING, 'xhtmlOut': False}, lenient=False)
        _cleaner = nh3.Cleaner(tags=_TAGS, attributes=_ATTRS, url_schemes={'http', 'https', 'mailto'}, link_rel=None,
                               strip_comments=True, filter_style_properties={'text-align'}, attribute_filter=_no_fetch)
    try: html = _read(_check_md.render, md_text)
    except (_TooCostly, _TooCostlyInline, _Unreadable): return False
    clean = _cleaner.clean(html)
    # mostly nh3 only re-serialises (`"` for `&quot;` in text, `&nbsp;`): then the strings agree, and that is enough
    if html.replace('&quot;', '"') == clean.replace('&quot;', '"').replace('&nbsp;', '\xa0'): return True
    return _Shape(html).items == _Shape(clean).items


def _safe_block(node, lines, prev)->str:
    """One top-level block written out and checked alone, as a frontend renders it: a destination nh3 will not take
    costs the block its links; failing that, it is shown as plain text."""
    for links in (True, False):
        out = _Writer(links, lines).block(node, prev)
        if not out or _render_check(out): return out
    log.warning('boopiter_ext: a block of a reply did not pass the HTML allow-list after rebuilding; shown as plain text')
    start, end = node.tok.map
    return fence('\n'.join(lines[start:end]))


def _safe_piece(text, env, prev)->list:
    "The blocks of one piece of normalized text, each rebuilt and checked on its own."
    with _no_gc():
        try: nodes, out, lines = _tree(_read(_parser().parse, text, env)), [], None
        except _Unreadable as e:
            log.warning('boopiter_ext: the Markdown parser failed on a reply (%s); shown as plain text', e)
            return [fence(text)] if text else []
        for node in nodes:
            lines = lines or text.split('\n')
            if (block := _safe_block(node, lines, prev)): out.append(block)
            prev = block or prev
    return out


def _blocks(text, env)->list:
    "(first line, type) of each top-level block of `text`, read by the block parser alone; definitions go to `env`."
    tokens = []
    _read(_parser().block.parse, text, _parser(), env, tokens)
    return [(t.map[0], t.type) for t in tokens if t.level == 0 and t.nesting >= 0 and t.map]


def _pieces(text, env, size)->list:
    "`text` cut at top-level block boundaries into pieces of about `size` characters (a short one is read once)."
    if len(text) <= size: return [text]
    out, begin, starts = [], 0, [0] + [m.end() for m in re.finditer('\n', text)]
    with _no_gc(): blocks = _blocks(text, env)
    for line, _ in blocks[1:]:
        if starts[line] - begin >= size:
            out.append(text[begin:starts[line]])
            begin = starts[line]
    return out + [text[begin:]]


@contextmanager
def _no_gc():
    "Collect no garbage while the parser makes its many small objects: in a kernel's large heap that halves the cost."
    was = gc.isenabled()
    gc.disable()
    try: yield
    finally:
        if was: gc.enable()


def safe_blocks(
    text:str,        # Markdown written by a model (untrusted)
    prev:str=None,   # The safe block before `text`, if it continues a reply (a list after a list stays apart)
    size:int=1<<16,  # Rebuild at most about this many characters at a time: memory stays bounded however long
)->list:             # Its top-level blocks, each Markdown that renders alone to nothing but allow-listed HTML
    "Rebuild untrusted Markdown from its tokens, block by block, escaped and vetted; nh3 checks each block alone."
    text, env, out = normalize(text), {}, []
    try:
        for piece in _pieces(text, env, size): out += _safe_piece(piece, env, out[-1] if out else prev)
        return out
    except _Unreadable as e:
        log.warning('boopiter_ext: the Markdown parser failed on a reply (%s); shown as plain text', e)
        return [fence(text)] if text else []
    except _TooCostly:
        log.warning('boopiter_ext: a reply whose layout would take quadratic time (block quotes over %s lines) is shown '
                    'as plain text', f'{LAYOUT_BUDGET:,}')
        return [fence(text)] if text else []


def safe_markdown(
    text:str,        # Markdown written by a model (untrusted)
    prev:str=None,   # The safe block before `text`, if it continues a reply (a list after a list stays apart)
    size:int=1<<16,  # Rebuild at most about this many characters at a time: memory stays bounded however long
)->str:              # Markdown that renders to nothing but allow-listed HTML, in any CommonMark or GFM renderer
    "`safe_blocks` as one text: the blocks apart by blank lines, so a renderer reads the same blocks from it."
    return '\n\n'.join(safe_blocks(text, prev, size))


_OPENING = re.compile(r' {0,3}(`{3,}|~{3,})')
_MARKER = re.compile(r'(?:([-+])|\d{1,9}([.)]))(?: |$)')   # a list's first marker, as `_Writer` writes it


def _open_fence(lines)->bool:
    "Whether `lines`, a fenced code block first, run to their end with that fence never closed."
    m = _OPENING.match(lines[0]) if lines else None
    if not m: return False
    closing = re.compile(f' {{0,3}}{re.escape(m[1][0])}{{{len(m[1])},}}[ \\t]*$')
    return not any(closing.match(ln) for ln in lines[1:])


class SafeStream:
    """`safe_blocks` of a text that only grows (a streaming reply): the blocks before the last one no longer
    change, so each is rebuilt and checked once and kept; each call rebuilds only the last block. A link
    reference defined after its use resolves in the final, whole-text `safe_blocks`. `open` says whether the
    last block is a code fence the text has not closed yet (the frontend may show it as plain growing code)."""
    def __init__(self): self.done, self.kept, self.plain, self.open = 0, [], False, False   # done: characters kept

    def blocks(self, text:str)->list:
        "The safe blocks of `text`, which extends the text of the previous call."
        tail, self.open = text[self.done:], False
        try:
            if self.plain: raise _TooCostly
            with _no_gc(): blocks = _blocks(norm := normalize(tail), {})
        except (_TooCostly, _Unreadable):   # from here on, the rest is plain text: the next update would cost as much
            self.plain = True
            return self.kept + ([fence(normalize(tail))] if tail else [])
        # everything before the last block's first line is settled; before the one ahead of it if that is a list,
        # whose end depends on how the next line turns out (`3` may become `3. item`)
        last = blocks[-1][0] if blocks else 0
        settled = blocks[-2][0] if len(blocks) > 1 and blocks[-2][1] in ('bullet_list', 'ordered_list') else last
        self.open = bool(blocks) and blocks[-1][1] == 'fence' and _open_fence(norm.split('\n')[last:])
        if settled:
            cut = [m.end() for m in _NEWLINES.finditer(tail)][settled - 1]
            self.kept += safe_blocks(tail[:cut], self.kept[-1] if self.kept else None)
            self.done, tail = self.done + cut, tail[cut:]
        return self.kept + safe_blocks(tail, self.kept[-1] if self.kept else None)

    def __call__(self, text:str)->str:
        "`blocks` as one text."
        return '\n\n'.join(self.blocks(text))
