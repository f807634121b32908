"""What `fetch_url` and `read_pdf` show the model: a web page's HTML as readable text, and a long text a window at a
time.

`html_text` keeps what a reader sees of a page (headings, paragraphs, list items, table rows, links as [text](url))
and drops scripts, styles and hidden elements; it stops after `_HTML_SECONDS`, saying so. `_window` shows `_PAGE`
characters of a text from `start`, and how to read on.

    html_text('<h1>Guide</h1><p>Read <a href="/a">this</a></p>', 'https://example.com/')
"""

__all__ = ['html_text']

import re, time
from html.parser import HTMLParser
from urllib.parse import urljoin

_PAGE = 3_500              # characters one answer shows: with its header it fits the tool loop's 4,000
_HTML_SECONDS = 3.0        # turning one page's HTML into text (2 MB of `<` takes 5 s)


def _window(text, start, more, counted=True)->str:
    "`text` from character `start`, `_PAGE` characters of it, and how to read on when there is more."
    part = text[start:start + _PAGE]
    if (rest := len(text) - start - len(part)) <= 0: return part
    return part + f'\n… [{f"{rest:,} more characters" if counted else "more"}: {more(start + len(part))} reads on]'


def _start(start)->int|str:
    try: start = int(start)
    except (TypeError, ValueError): return f'error: start must be a whole number, not {start!r}'
    return start if start >= 0 else 'error: start must be 0 or more'


# ---- HTML as text

_VOID = frozenset('area base br col embed hr img input link meta param source track wbr'.split())
_DROP = frozenset('script style noscript template svg math iframe object canvas select datalist dialog'.split())
_PARA = frozenset('p blockquote dl figure pre table'.split())   # a blank line before and after
_BLOCK = frozenset('address article aside body caption center dd details div dt fieldset figcaption footer form '
                   'header hgroup html legend li main nav section summary tbody tfoot thead tr'.split())   # a line each
_HIDDEN_STYLE = re.compile(r'display\s*:\s*none|visibility\s*:\s*hidden', re.I)


class _Text(HTMLParser):
    "Collects what a reader sees of a page: text, headings, list items, table rows, links; not what is hidden."
    def __init__(self, base):
        super().__init__(convert_charrefs=True)
        self.base, self.out, self.title, self.links = base, [], [], []
        self.skip, self.depth, self.pre, self.lists, self.cells, self.in_title = None, 0, 0, 0, 0, False

    def _put(self, s):
        if s: self.out.append(s)

    def _line(self, n=1):
        "End the text so far with (at least) `n` line breaks."
        tail = ''.join(self.out[-3:])
        if self.out: self._put('\n' * (n - (len(tail) - len(tail.rstrip('\n')))))

    def handle_starttag(self, tag, attrs):
        if self.skip is not None:
            self.depth += tag == self.skip
            return
        a = dict(attrs)
        hidden = 'hidden' in a or a.get('aria-hidden') == 'true' or _HIDDEN_STYLE.search(a.get('style') or '')
        if (tag in _DROP or hidden) and tag not in _VOID:   # what a reader never sees: scripts, styles, hidden text
            self.skip, self.depth = tag, 1
            return
        if tag in ('ul', 'ol'):
            self.lists += 1
            self._line(1 if self.lists > 1 else 2)
        elif tag in _PARA or re.fullmatch(r'h[1-6]', tag): self._line(2)
        elif tag in _BLOCK: self._line()
        if tag == 'title': self.in_title = True
        elif tag[0] == 'h' and tag[1:] in ('1', '2', '3', '4', '5', '6'): self._put('#' * int(tag[1]) + ' ')
        elif tag == 'li': self._put('  ' * max(0, self.lists - 1) + '- ')
        elif tag == 'tr': self.cells = 0
        elif tag in ('td', 'th'):
            self._put(' | ' if self.cells else '')
            self.cells += 1
        elif tag == 'br': self._put('\n')
        elif tag == 'hr':
            self._line()
            self._put('---\n')
        elif tag == 'pre': self.pre += 1
        elif tag == 'img' and (alt := ' '.join((a.get('alt') or '').split())): self._put(f'[image: {alt}]')
        elif tag == 'a': self.links.append((len(self.out), a.get('href') or ''))

    def handle_endtag(self, tag):
        if self.skip is not None:
            self.depth -= tag == self.skip
            if self.depth == 0: self.skip = None
            return
        if tag == 'title': self.in_title = False
        elif tag == 'a' and self.links: self._link(*self.links.pop())
        elif tag in ('ul', 'ol'):
            self.lists = max(0, self.lists - 1)
            self._line(1 if self.lists else 2)
        elif tag in _PARA or re.fullmatch(r'h[1-6]', tag): self._line(2)
        elif tag in _BLOCK: self._line()
        if tag == 'pre': self.pre = max(0, self.pre - 1)

    def _link(self, at, href):
        "Write the link ending here as `[text](url)`, for a web link whose text is not the url itself."
        url = urljoin(self.base, href.strip()) if href.strip() else ''
        text = ''.join(self.out[at:]).strip()
        if not text or not url.startswith(('http://', 'https://')) or url == text or len(url) > 500: return
        if '#' in url and url.split('#')[0] == self.base.split('#')[0]: return   # a jump within this page
        self.out.insert(at, '[')
        self._put(f']({url})')

    def handle_data(self, data):
        if self.skip is not None: return
        if self.in_title: self.title.append(data)
        elif self.pre: self._put(data)
        else:
            s = re.sub(r'\s+', ' ', data)
            self._put(s.lstrip(' ') if not self.out or self.out[-1].endswith(('\n', ' ')) else s)


def html_text(
    html:str,      # A web page's HTML
    base:str='',   # The page's URL: relative links are resolved against it
)->str:            # Its title, then its text: `#` headings, `- ` list items, `a | b` table rows, links as [text](url)
    "A web page as text a model can read: no scripts, styles or hidden elements."
    p, end, piece = _Text(base), time.monotonic() + _HTML_SECONDS, 1 << 18
    for i in range(0, len(html), piece):   # in a few big pieces: an unclosed tag is rescanned once per piece
        if time.monotonic() > end: break
        p.feed(html[i:i + piece])
    else: i = len(html)
    p.close()
    text = re.sub(r'\n{3,}', '\n\n', re.sub(r'[ \t]+\n', '\n', ''.join(p.out))).strip()
    if i < len(html): text += f'\n\n[the rest of the page was not read: making it text took over {_HTML_SECONDS:g} s]'
    title = ' '.join(''.join(p.title).split())
    return '\n\n'.join(filter(None, [title and f'Title: {title}', text]))

