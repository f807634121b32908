r"""Model Markdown made safe to render, by whatever renders it.

A reply's Markdown is shown by renderers that trust it: JupyterLab and Notebook 7 render a live `text/markdown`
output with marked and run the HTML in it, VS Code with markdown-it, GitHub and nbconvert with their own. So the
model's text is never passed on as written, and never patched line by line. `safe_markdown` parses it once
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

Then the result is rendered once more and handed to nh3, an allow-list HTML sanitizer (Rust's ammonia): if it
would remove anything at all, the text is shown as a plain code block instead. Nothing of the reply can thus carry
an element, attribute or URL that the allow-list does not name.

    safe_markdown('**hi** <img src=x onerror=alert(1)>')    # '**hi** \\<img src=x onerror=alert(1)\\>'
    stream = SafeStream()                                    # the same for a text that grows while it streams:
    stream(partial); stream(longer)                          # finished blocks are rebuilt once, not per update
"""

__all__ = ['safe_markdown', 'SafeStream', 'fence', 'inline_text', 'vet_url', 'normalize']

import gc, html, logging, re
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
_md = _check_md = None


def normalize(text:str)->str:
    "`text` with `\\n` line ends only, no control character or lone surrogate, and nothing a parser takes for a line break."
    return _CONTROLS.sub('\ufffd', _BREAKS.sub(' ', _NEWLINES.sub('\n', text)))


# ---- math: a markdown-it inline rule, so math is a token like code and nothing inside it is escaped

def _math_end(src, start, close, limit):
    "Where the math opened just before `start` closes (`close` not escaped, no blank line before it), or -1."
    i = start
    while (i := src.find(close, i, limit)) >= 0:
        if src[i-1] != '\\' or src[i-2:i] == '\\\\':
            return -1 if re.search(r'\n[ \t]*\n', src[start:i]) else i
        i += 1
    return -1


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
    i = _math_end(src, pos + len(opener), close, end)
    if i < 0: return False
    body = src[pos+len(opener):i]
    if opener == '$' and (body[-1:].isspace() or src[i+1:i+2].isdigit()): return False
    if not body.strip() or '`' in body or '](' in body or body.endswith('\\') or '$' in body.replace('\\$', ''):
        return False
    if opener == '\\[' and not _MATHY.search(body): return False
    if not silent:
        tok = state.push('math', 'math', 0)
        tok.content, tok.markup = body, '$$' if display else '$'
    state.pos = i + len(close)
    return True


class _TooCostly(Exception):
    "Laying the text out would take the parser quadratic time: its block quotes rescan the same lines again and again."


def _metered(rule, budget):
    """markdown-it's block-quote rule with a meter. Each block quote it opens scans ahead to the next blank line (lazy
    lines included) before laying out what it holds, so `'> # h\nx\n' * n` costs n² line scans: 14 KB of it take
    seconds. Each quote opened adds the lines up to that blank line to the parse's count; past `budget`, `_TooCostly`."""
    def blockquote(state, start, end, silent):
        if not silent:
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


def _parser():
    "The CommonMark parser (markdown-it-py, imported on first use) that reads model text, math included."
    global _md
    if _md is None: _md = _markdown_it({'html': True, 'maxNesting': 64}, math=True)
    return _md


def _markdown_it(options, math=False):
    "markdown-it-py for CommonMark with GFM tables and strikethrough, its block quotes metered, every link left to us."
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import blockquote
    md = MarkdownIt('commonmark', options).enable(['table', 'strikethrough'])
    md.block.ruler.at('blockquote', _metered(blockquote, LAYOUT_BUDGET), {'alt': ['paragraph', 'reference', 'blockquote', 'list']})
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
        while url.endswith(')') and url.count(')') > url.count('('): url = url[:-1]
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


class _Writer:
    "Markdown from a markdown-it syntax tree, every piece of it escaped or vetted."
    def __init__(self, links=True): self.bullets, self.in_link, self.links, self.word = 0, False, links, ''

    def blocks(self, nodes, sep='\n\n', prev=None)->str:
        out = []
        for n in nodes:
            s = self.block(n, prev)
            if s is not None: out.append(s)
            prev = n.type
        return sep.join(out)

    def block(self, n, prev=None)->str|None:
        t = n.type
        if t == 'paragraph': return self.inline(n.children[0]) if n.children else ''
        if t == 'heading':
            inner = self.inline(n.children[0]) if n.children else ''
            plain = not any(c.type in ('strong', 'em') for c in n.children[0].children) if n.children else True
            return f'**{inner}**' if inner and plain else inner
        if t in ('fence', 'code_block'): return fence(n.content, n.info.split()[0] if n.info.split() else '')
        if t == 'html_block': return fence(n.content, 'html')
        if t == 'hr': return '***'
        if t == 'blockquote': return self._prefix(self.blocks(n.children) or '', '> ', '> ')
        if t in ('bullet_list', 'ordered_list'): return self._list(n, prev)
        if t == 'table': return self._table(n)
        return None

    @staticmethod
    def _prefix(body, first, rest):
        lines = body.split('\n')
        return '\n'.join([(first + lines[0]).rstrip()] + [(rest + ln).rstrip() for ln in lines[1:]])

    def _list(self, n, prev):
        tight = not any(p.type == 'paragraph' and not p.hidden for it in n.children for p in it.children)
        self.bullets += prev == n.type   # two lists in a row stay two: alternate their markers
        sep, items = '\n' if tight else '\n\n', []
        start = int(n.attrs.get('start', 1)) if n.type == 'ordered_list' else 0
        for k, item in enumerate(n.children):
            if n.type == 'ordered_list': marker = f'{min(start + k, 999_999_999)}{".)"[self.bullets % 2]}'
            else: marker = '-+'[self.bullets % 2]
            body = self.blocks(item.children, sep)
            items.append(self._prefix(body, marker + ' ', ' ' * (len(marker) + 1)) if body else marker)
        return sep.join(items)

    def _table(self, n):
        rows = [r for part in n.children for r in part.children]
        if not rows: return ''
        def cell(c): return self.inline(c.children[0]).replace('\n', ' ') if c.children else ''
        def line(r): return '| ' + ' | '.join(cell(c) for c in r.children) + ' |'
        align = {'text-align:left': ':--', 'text-align:center': ':-:', 'text-align:right': '--:'}
        head = '| ' + ' | '.join(align.get(c.attrs.get('style', ''), '---') for c in rows[0].children) + ' |'
        return '\n'.join([line(rows[0]), head, *map(line, rows[1:])])

    def inline(self, node)->str:
        "An inline run: text escaped, and at each line's start nothing that could begin a block."
        self.word = ''
        s = ''.join(self._inline(c) for c in node.children)
        return '\n'.join(self._line(ln) for ln in s.split('\n'))

    @staticmethod
    def _line(ln):
        ln = ln.strip(' \t')
        return _LINE_START.sub(lambda m: m[2][:-1] + '\\' + m[2][-1] if m[2][-1] in '#+=-' else m[2] + '\\', ln, 1)

    def _word(self, s):
        "Remember the text since the last space: what a renderer's autolink could take for a URL and run on from."
        self.word = re.split(r'\s', self.word + s)[-1]
        return s

    def _inline(self, n)->str:
        t = n.type
        if t == 'text': return self._word(_prose(n.content) if self.links and not self.in_link else _text(n.content))
        if t in ('softbreak', 'hardbreak'): self.word = ''
        if t == 'softbreak': return '\n'
        if t == 'hardbreak': return '\\\n'
        if t == 'code_inline':   # autolinks (marked's, linkify's) run on past a backtick: code never touches a URL
            space, self.word = ' ' if re.search(r'[:.@]', self.word) else '', ''
            return space + _code_span(n.content)
        if t == 'math': return self._word(self._math(n))
        if t == 'html_inline': return self._word(_text(n.content))
        self.in_link, was = self.in_link or t in ('link', 'image'), self.in_link   # no link inside a link
        try: inner = ''.join(self._inline(c) for c in n.children)
        finally: self.in_link = was
        if t == 'em': return f'*{inner}*' if inner else ''
        if t == 'strong': return f'**{inner}**' if inner else ''
        if t == 's': return f'~~{inner}~~' if inner else ''
        if t == 'link':
            href = vet_url(n.attrs.get('href', '')) if self.links else None
            if href is None: return inner
            self.word = ''   # the `<` of `(<...>)` ends any autolink
            return f'[{inner or _text(href)}](<{href}>)'
        if t == 'image':
            alt = _text(n.content)
            if not self.links: return f'🖼 {alt}'
            if (src := vet_url(n.attrs.get('src', ''), image=True)) is not None: return f'![{alt}](<{src}>)'
            if (href := vet_url(n.attrs.get('src', ''))) is not None: return f'[🖼 {alt or "image"}](<{href}>)'
            return f'🖼 {alt}'
        return inner

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

    def handle_starttag(self, tag, attrs): self.items.append(('<', tag, sorted((k, v or '') for k,v in attrs)))
    def handle_startendtag(self, tag, attrs): self.handle_starttag(tag, attrs)
    def handle_endtag(self, tag): self.items.append(('>', tag))
    def handle_data(self, data):
        if self.items and self.items[-1][0] == 't': self.items[-1] = ('t', self.items[-1][1] + data)
        else: self.items.append(('t', data))
    def handle_comment(self, data): self.items.append(('!', data))
    def handle_decl(self, decl): self.items.append(('!', decl))
    def handle_pi(self, data): self.items.append(('!', data))


def _no_fetch(tag, attr, value):
    "nh3's attribute filter: an image only from a relative path (a remote one would be fetched as the page loads)."
    return None if tag == 'img' and attr == 'src' and (value.startswith('//') or _SCHEME.match(value)) else value


def _render_check(md_text)->bool:
    "Whether `md_text` renders (CommonMark, raw HTML allowed) to HTML that nh3's allow-list leaves exactly as it is."
    global _check_md
    import nh3
    if _check_md is None:   # nesting deeper than the reading parser's: nothing of what was kept can hide from the check
        _check_md = _markdown_it({'html': True, 'maxNesting': 128, 'xhtmlOut': False})
    html = _check_md.render(md_text)
    clean = nh3.clean(html, tags=_TAGS, attributes=_ATTRS, url_schemes={'http', 'https', 'mailto'}, link_rel=None,
                      strip_comments=True, filter_style_properties={'text-align'}, attribute_filter=_no_fetch)
    # mostly nh3 only re-serialises (`"` for `&quot;` in text, `&nbsp;`): then the strings agree, and that is enough
    if html.replace('&quot;', '"') == clean.replace('&quot;', '"').replace('&nbsp;', '\xa0'): return True
    return _Shape(html).items == _Shape(clean).items


def _rebuild(text, env, prev, links=True)->str:
    from markdown_it.tree import SyntaxTreeNode
    return _Writer(links).blocks(SyntaxTreeNode(_parser().parse(text, dict(env))).children, prev=prev)


def _safe_piece(text, env, prev)->str:
    "One piece of normalized text rebuilt and checked; a destination nh3 will not take costs its link, not the piece."
    for links in (True, False):
        with _no_gc(): ok = _render_check(out := _rebuild(text, env, prev, links))
        if ok: return out
    log.warning('boopiter_ext: a reply did not pass the HTML allow-list after rebuilding; shown as plain text')
    return fence(text)


def _blocks(text, env)->list:
    "(first line, type) of each top-level block of `text`, read by the block parser alone; definitions go to `env`."
    tokens = []
    _parser().block.parse(text, _parser(), env, tokens)
    return [(t.map[0], t.type) for t in tokens if t.level == 0 and t.nesting >= 0 and t.map]


def _pieces(text, env, size)->list:
    "`text` cut at top-level block boundaries into pieces of about `size` characters: [(piece, type before it)]."
    blocks, starts = _blocks(text, env), [0] + [m.end() for m in re.finditer('\n', text)]
    out, begin, prev = [], 0, None
    for (line, typ), (_, before) in zip(blocks[1:], blocks):
        if starts[line] - begin >= size:
            out.append((text[begin:starts[line]], prev))
            begin, prev = starts[line], before
    return out + [(text[begin:], prev)]


@contextmanager
def _no_gc():
    "Collect no garbage while the parser makes its many small objects: in a kernel's large heap that halves the cost."
    was = gc.isenabled()
    gc.disable()
    try: yield
    finally:
        if was: gc.enable()


def safe_markdown(
    text:str,        # Markdown written by a model (untrusted)
    prev:str=None,   # The type of the block before `text`, if it continues a reply (two lists stay two)
    size:int=1<<16,  # Rebuild at most about this many characters at a time: memory stays bounded however long
)->str:              # Markdown that renders to nothing but allow-listed HTML, in any CommonMark or GFM renderer
    "Rebuild untrusted Markdown from its tokens, escaped and vetted; nh3 checks the result, else less of it is kept."
    text, env = normalize(text), {}
    try: return '\n\n'.join(p for piece, before in _pieces(text, env, size) if (p := _safe_piece(piece, env, before or prev)))
    except _TooCostly:
        log.warning('boopiter_ext: a reply whose layout would take quadratic time (block quotes over %s lines) is shown '
                    'as plain text', f'{LAYOUT_BUDGET:,}')
        return fence(text)


class SafeStream:
    """`safe_markdown` of a text that only grows (a streaming reply): the blocks before the last one no longer
    change, so each is rebuilt and checked once and kept; each call rebuilds only the last block. A link
    reference defined after its use resolves in the final, whole-text `safe_markdown`."""
    def __init__(self): self.done, self.kept, self.prev, self.plain = 0, [], None, False   # done: characters kept

    def __call__(self, text:str)->str:
        tail = text[self.done:]
        try:
            if self.plain: raise _TooCostly
            with _no_gc(): blocks = _blocks(normalize(tail), {})
        except _TooCostly:   # from here on, the rest is plain text: the next update would cost as much again
            self.plain = True
            return '\n\n'.join(self.kept + [fence(normalize(tail))])
        if len(blocks) > 1:   # everything before the last block's first line is settled
            cut = [m.end() for m in _NEWLINES.finditer(tail)][blocks[-1][0] - 1]
            if (part := safe_markdown(tail[:cut], self.prev)): self.kept.append(part)
            self.done, self.prev, tail = self.done + cut, blocks[-2][1], tail[cut:]
        return '\n\n'.join(self.kept + [p for p in [safe_markdown(tail, self.prev)] if p])
