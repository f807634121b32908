"""The Python blocks of a model's reply, as CommonMark reads them: the model calls tools by writing Python.

`python_blocks` finds the complete ```python blocks of a reply as a CommonMark renderer reads it (`_Fences`: block
quotes, list items, lazy lines, HTML blocks and indented code included), so the code that may run is the code the
user sees: a reply cut short never yields code, and a block nested deeper than `safe_markdown` shows is no block.
Reading a reply is linear in its length. `_fences` gives every fenced block with its offsets (lenient.py reads the
```tool_call and ```json ones). `cell_source` says how a block runs as a cell of a Python kernel (Python as it is, a
shell script under `%%bash`, any other language not at all), and `shell_cells` gives a reply's shell blocks so.

    for code in python_blocks(reply):
        calls, problem = plan_calls(code, user_ns)
"""

__all__ = ['python_blocks', 'cell_source', 'shell_cells']

import bisect, re
from ..render.sanitize import normalize

_PY_LANGS = {'python', 'py', 'python3', 'ipython'}
_SHELL_LANGS = {'bash', 'sh', 'shell'}   # run by `%%bash` (a POSIX sh script runs in bash)
_SHOWN = 64   # `safe_markdown` shows nothing nested this deep (markdown-it's maxNesting: a list item counts two)
_MARKER = re.compile(r'[*+-]|(\d{1,9})[.)]')
_ATX = re.compile(r'#{1,6}(?:[ \t]|$)')
_FENCE = re.compile(r'`{3,}|~{3,}')
_SETEXT = re.compile(r'(?:=+|-+)[ \t]*$')
_HTML_NAMES = ('address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|'
               'dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|'
               'link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|'
               'tfoot|th|thead|title|tr|track|ul')
_TAG = (r'(?:<[A-Za-z][A-Za-z0-9-]*(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\s*=\s*(?:[^"\'=<>`\x00-\x20]+|\'[^\']*\'|"[^"]*"))?)*'
        r'\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)')
_HTML = [  # CommonMark's seven kinds of HTML block: (how one starts, what ends it; None: a blank line)
    (re.compile(r'<(?:script|pre|style|textarea)(?=\s|>|$)', re.I | re.A),
     re.compile(r'</(?:script|pre|style|textarea)>', re.I | re.A)),
    (re.compile('<!--'), re.compile('-->')), (re.compile(r'<\?'), re.compile(r'\?>')),
    (re.compile('<![A-Za-z]'), re.compile('>')), (re.compile(r'<!\[CDATA\['), re.compile(r'\]\]>')),
    (re.compile(rf'</?(?:{_HTML_NAMES})(?=\s|/?>|$)', re.I | re.A), None), (re.compile(_TAG + r'\s*$'), None)]


_ESCAPABLE = set('!"#$%&\'()*+,./:;<=>?@[\\]^_`{|}~-')
_LABEL = re.compile(r'\[(?:[^\\\[\]]|\\.){0,1000}\]:', re.S)
_SPNL, _EOL = re.compile(r' *(?:\n *)?'), re.compile(r' *(?:\n|\Z)')
_ANGLE = re.compile(r'<(?:[^<>\n\\\x00]|\\.)*>', re.S)
_TITLE = re.compile(r'"(?:\\[\s\S]|[^\\"\x00])*"|\'(?:\\[\s\S]|[^\\\'\x00])*\'|\((?:\\[\s\S]|[^\\()\x00])*\)')


def _dest_end(s, i)->int:
    "Where the link destination at `i` ends, or -1 (parentheses balanced, no whitespace, or inside `<...>`)."
    if (m := _ANGLE.match(s, i)): return m.end()
    if s[i:i+1] == '<': return -1
    j, depth = i, 0
    while j < len(s) and s[j] not in ' \t\n\x0b\x0c\r' and (s[j] != ')' or depth):
        if s[j] == '\\' and s[j+1:j+2] in _ESCAPABLE: j += 1
        else: depth += {'(': 1, ')': -1}.get(s[j], 0)
        j += 1
    return -1 if depth or j == i and s[j:j+1] != ')' else j


def _ref_end(s, i)->int:
    "Where the link reference definition at `i` in a paragraph's text ends (commonmark.js's reading), or -1."
    if not (m := _LABEL.match(s, i)) or len(m[0]) > 1002 or re.fullmatch(r'[\s\ufeff]*', m[0][1:-2]): return -1
    if (j := _dest_end(s, _SPNL.match(s, m.end()).end())) < 0: return -1
    title = _TITLE.match(s, k) if (k := _SPNL.match(s, j).end()) > j else None   # a title needs space before it
    end = title and _EOL.match(s, title.end()) or _EOL.match(s, j)   # else the line may end after the destination
    return end.end() if end else -1


class _Cursor:
    "A place in one line: character `i` at column `col` (a tab runs to the next multiple of 4); `part`: inside a tab."
    def __init__(self, s):
        self.s, self.i, self.col, self.part, self._rule, self._run = s, 0, 0, False, None, (-1, -1, 0)
        self.end = len(s.rstrip(' \t'))   # the rest of the line is blank from here

    def blank(self)->bool: return self.i >= self.end

    def peek(self)->tuple:
        "(indent, index, column) of the next character that is not a space or a tab."
        start, i, col = self._run   # a run of spaces is scanned once, however many containers it indents
        if not start <= self.i <= i:
            i, col = self.i, self.col
            while i < len(self.s) and self.s[i] in ' \t':
                col += 4 - col % 4 if self.s[i] == '\t' else 1
                i += 1
            self._run = self.i, i, col
        return col - self.col, i, col

    def skip(self): _, self.i, self.col = self.peek(); self.part = False

    def advance(self, n:int, cols=True):
        "Move on `n` columns (or `n` characters, if not `cols`), taking only part of a tab if need be."
        while n > 0 and self.i < len(self.s):
            if self.s[self.i] == '\t' and cols:
                step = min(n, 4 - self.col % 4)
                self.part = step < 4 - self.col % 4
                self.col, self.i, n = self.col + step, self.i + (not self.part), n - step
            else:
                self.col += 4 - self.col % 4 if self.s[self.i] == '\t' else 1
                self.part, self.i, n = False, self.i + 1, n - 1

    def space(self): return self.i < len(self.s) and self.s[self.i] in ' \t'

    def rest(self)->str:
        "The rest of the line as a block's content: the part of a tab not yet taken becomes spaces."
        return ' ' * (4 - self.col % 4) + self.s[self.i+1:] if self.part else self.s[self.i:]

    def rule(self, i)->bool:
        "Whether the line from `i` is a thematic break (`***`, `- - -`): found once per line, however often asked."
        if self._rule is None:
            t = self.s[:self.end]
            c, hi = t[-1:], len(t) if t[-1:] in ('*', '-', '_') else 0
            for _ in range(3): hi = t.rfind(c, 0, hi) if hi > 0 else -1   # the third `c` from the end
            self._rule = len(t.rstrip(c + ' \t')), hi
        return self._rule[0] <= i <= self._rule[1]


class _Box:
    "An open container: a block quote, or a list item whose lines need `need` columns of indent."
    def __init__(self, quote:bool, need:int=0): self.quote, self.need, self.kids = quote, need, False


class _Fences:
    """Every fenced code block of a Markdown text as CommonMark reads it, block quotes, list items, lazy lines, HTML
    blocks and indented code included (the container part of its parsing strategy). Each line costs time in
    proportion to its length: a blank line passes the open list items it continues in one step."""
    def __init__(self):
        self.stack, self.quotes = [], []   # the open containers; where the quotes are among them
        self.leaf, self.fence, self.html, self.text, self.out = None, None, None, [], []   # text: the paragraph's lines

    def read(self, text)->list:
        "(language, code, first line, end line, closed, nesting) of each fenced block of `text` (normalized)."
        lines = text.split('\n')
        if text.endswith('\n'): lines.pop()
        for k,s in enumerate(lines):
            self.nl = '\n' if k + 1 < len(lines) or text.endswith('\n') else ''
            self.line(k, s)
        self.close(0, len(lines))
        return self.out

    def push(self, box):
        self.add()
        if box.quote: self.quotes.append(len(self.stack))
        self.stack.append(box)

    def add(self, leaf=None):
        "A block opens inside the innermost container."
        if self.stack: self.stack[-1].kids = True
        self.leaf, self.text = leaf, []

    def close(self, n, k):
        "Close the open leaf block and every container past the first `n`, at line `k`."
        if self.leaf == 'fence': self.out.append((*self.fence, k, False))
        self.leaf, self.text = None, []
        del self.stack[n:]
        while self.quotes and self.quotes[-1] >= n: self.quotes.pop()

    def continues(self, box, cur)->bool:
        "Whether the line continues `box`; if so `cur` moves past its marker or indent."
        indent, i, _ = cur.peek()
        if box.quote:
            if indent > 3 or i >= len(cur.s) or cur.s[i] != '>': return False
            cur.skip()
            cur.advance(1, False)
            if cur.space(): cur.advance(1)
            return True
        if indent < box.need: return False
        cur.advance(box.need)
        return True

    def matched(self, cur)->int:
        "How many open containers the line continues."
        for n,box in enumerate(self.stack):
            if cur.blank():   # containers up to the next quote, but an empty item ends at its second blank line
                at = bisect.bisect_left(self.quotes, n)
                q = self.quotes[at] if at < len(self.quotes) else len(self.stack)
                if q == len(self.stack) and not self.stack[-1].quote and not self.stack[-1].kids: q -= 1
                if q > n: cur.skip()   # a list item takes the blank line whole
                return q
            if not self.continues(box, cur): return n
        return len(self.stack)

    def leaf_takes(self, k, cur)->bool:
        "Whether the open code, HTML or fenced block takes the line (a fence's closing line included)."
        indent, i, _ = cur.peek()
        if self.leaf == 'code': return indent >= 4 or cur.blank()
        if self.leaf == 'html':
            if cur.blank() and self.html is None: return False
            if self.html is not None and self.html.search(cur.s, i): self.leaf = None
            return True
        ch, n, off = self.fence[0], len(self.fence[1]), self.fence[2]
        if indent <= 3 and (m := _FENCE.match(cur.s, i)) and m[0][0] == ch and len(m[0]) >= n and m.end() >= cur.end:
            self.out.append((*self.fence, k + 1, True))
            self.leaf = None
            return True
        for _ in range(off):
            if cur.space(): cur.advance(1)
        self.fence[4].append(cur.rest() + self.nl)
        return True

    def item(self, cur, indent, i, interrupts)->_Box|None:
        "The list item the line starts at `i`, if any (`cur` moved past its marker and the space after it)."
        s = cur.s
        if not (m := _MARKER.match(s, i)) or m.end() < len(s) and s[m.end()] not in ' \t': return None
        if interrupts and (m.end() >= cur.end or m[1] is not None and int(m[1]) != 1): return None
        cur.skip()
        cur.advance(m.end() - i)
        col, pos = cur.col, cur.i
        cur.advance(1)
        while cur.col - col < 5 and cur.space(): cur.advance(1)
        spaces = cur.col - col
        if spaces >= 5 or spaces < 1 or cur.blank():
            cur.col, cur.i, cur.part, spaces = col, pos, False, 1
            if cur.space(): cur.advance(1)
        return _Box(False, indent + len(m[0]) + spaces)

    def line(self, k, s):
        "Read line `k`, `s`: the containers it continues, the blocks it starts, then where its text goes."
        cur = _Cursor(s)
        n = self.matched(cur)
        if n == len(self.stack) and self.leaf in ('code', 'html', 'fence') and self.leaf_takes(k, cur): return
        para = n == len(self.stack) and self.leaf == 'p' and not cur.blank()   # a paragraph the line may continue
        if (found := self.starts(k, cur, n, para)) is None: return   # a leaf block starts here
        n, i, started = found
        if not started and not cur.blank() and self.leaf == 'p' and not para: return self.text.append(s[i:])   # lazy
        if not para: self.close(n, k)
        if cur.blank(): return
        if self.leaf != 'p': self.add('p')
        self.text.append(s[i:])

    def starts(self, k, cur, n, para)->tuple|None:
        "The blocks the line starts: (containers now open, where its text starts, whether any); None for a leaf block."
        s, started = cur.s, False
        while True:
            indent, i, _ = cur.peek()
            c = s[i] if i < len(s) else ''
            if indent >= 4:
                if self.leaf == 'p' or not c: return n, i, started   # indented code cannot interrupt a paragraph
                self.leaf_line(n, k, 'code')
                return None
            if c == '>':
                self.close(n, k)
                cur.skip()
                cur.advance(1, False)
                if cur.space(): cur.advance(1)
                box = _Box(True)
            elif c == '#' and _ATX.match(s, i): return self.leaf_line(n, k, None)
            elif c in '`~' and (m := _FENCE.match(s, i)) and not (c == '`' and '`' in s[m.end():]):
                self.leaf_line(n, k, 'fence')
                info = s[m.end():].split()
                self.fence = [c, m[0], indent, (info[0] if info else '').lower(), [], k,
                              len(self.stack) + sum(not b.quote for b in self.stack)]
                return None
            elif c == '<' and (end := self.html_start(s, i, self.leaf != 'p')) is not False:
                self.leaf_line(n, k, 'html')
                self.html, self.leaf = end, None if end is not None and end.search(s, i) else 'html'
                return None
            elif para and not started and _SETEXT.match(s, i) and not self.refs_only():   # the paragraph is a heading
                self.leaf, self.text = None, []
                return None
            elif c and cur.rule(i): return self.leaf_line(n, k, None)
            elif not c or (box := self.item(cur, indent, i, para and not started)) is None: return n, i, started
            else: self.close(n, k)
            self.push(box)
            n, started = len(self.stack), True

    def refs_only(self)->bool:
        "Whether the paragraph is nothing but link reference definitions (then an underline is no heading): they go."
        s, i = ''.join(t + '\n' for t in self.text), 0
        while s[i:i+1] == '[' and (j := _ref_end(s, i)) > i: i = j
        if i < len(s): return False
        self.text = []
        return True

    def leaf_line(self, n, k, leaf):
        "A leaf block starting on line `k`: it ends what the line did not continue, and any open paragraph."
        self.close(n, k)
        self.add(leaf)
        return None

    @staticmethod
    def html_start(s, i, may_interrupt):
        "What ends the HTML block starting at `i` (None: a blank line), or False if none starts there."
        kind = next((k for k,(start,_) in enumerate(_HTML) if start.match(s, i)), None)
        if kind is None or kind == 6 and not may_interrupt: return False   # a lone tag cannot interrupt a paragraph
        return _HTML[kind][1]


def _fences(text):
    """(language, code, start, end, closed, nesting) of each fenced block as CommonMark reads `text` as shown (after
    `sanitize.normalize`, so no character only Python takes for a line break splits a line): `start` and `end` are
    offsets in `text`; `closed` is False for a fence its container or the text ended; `nesting` is its depth in
    markdown-it's count (a block quote one, a list item two)."""
    starts = [0] + [m.end() for m in re.finditer(r'\r\n?|\n', text)]
    def at(k): return starts[k] if k < len(starts) else len(text)
    return [(lang, ''.join(lines), at(first), at(end), closed, depth)
            for _, _, _, lang, lines, first, depth, end, closed in _Fences().read(normalize(text))]


def python_blocks(
    text:str,  # A model's reply, in Markdown
)->list:       # The code of each complete ```python (py, python3, ipython) block, in order
    """The code of every complete Python fenced block in `text`, as CommonMark reads it (in block quotes and list
    items too) and as `safe_markdown` shows it; a fence left open is not a block, nor one nested too deep to show."""
    return [code for lang,code,_,_,closed,depth in _fences(text) if closed and lang in _PY_LANGS and depth < _SHOWN]


def cell_source(
    lang:str,  # A fenced block's language: its info string's first word
    code:str,  # The block's code
)->str|None:   # The cell that runs it in a Python kernel; None: no cell does (the block is for copying)
    """The source of a cell that runs `code` in an IPython kernel: Python as it is, a shell script under `%%bash`;
    None for any other language (inserted as Python it would be a syntax error)."""
    lang = lang.lower()
    if lang in _PY_LANGS: return code
    return '%%bash\n' + code if lang in _SHELL_LANGS else None


def shell_cells(
    text:str,  # A model's reply, in Markdown
)->list:       # Each complete ```bash (sh, shell) block, as the `%%bash` cell that runs it, in order
    "The complete shell blocks of `text` as CommonMark reads it (as `python_blocks` finds Python ones), each as a cell."
    return [cell_source(lang, code) for lang,code,_,_,closed,depth in _fences(text)
            if closed and lang in _SHELL_LANGS and depth < _SHOWN]
