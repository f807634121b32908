// @vitest-environment jsdom
/**
 * The inline dry run quotes the notebook's cells and earlier replies: it renders them as strictly as a reply, through
 * the real `@jupyterlab/apputils` Sanitizer with the reply's options, so nothing remote is fetched (issue 21.1).
 */
import { Sanitizer } from '@jupyterlab/apputils/lib/sanitizer';
import { describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  const g = globalThis as any;
  g.DragEvent ??= class extends g.MouseEvent {};
});
vi.mock('@jupyterlab/apputils', () => ({ Clipboard: {} }));
// Jupyter's renderMarkdown, as far as safety goes: the source, as HTML, through the sanitizer it is given
vi.mock('@jupyterlab/rendermime', () => ({
  renderMarkdown: async (o: { host: HTMLElement; source: string; sanitizer: { sanitize: (s: string) => string } }) => {
    o.host.innerHTML = o.sanitizer.sanitize(o.source);
  }
}));

import { PREVIEW_MIME, PreviewRenderer } from '../../src/dryrun/inline';

const HOSTILE = [
  '<img src="https://evil.example/a.png">',
  '<p style="background: url(https://evil.example/b.png)">styled</p>',
  '<video poster="https://evil.example/c.png"></video>',
  '<img srcset="https://evil.example/d.png 2x" src="x.png">',
  '<link rel="stylesheet" href="https://evil.example/e.css">'
];

describe('the inline dry run', () => {
  it.each(HOSTILE)('renders %s with nothing that fetches from another host', async html => {
    const r = new PreviewRenderer({ sanitizer: new Sanitizer() } as any);
    const markdown = `*Dry run: nothing was sent.*\n\n${html}\n`;
    await r.renderModel({ data: { [PREVIEW_MIME]: { markdown, text: 'Dry run' } } } as any);
    const remote = Array.from(r.node.querySelectorAll('*')).filter(e =>
      ['src', 'poster', 'srcset', 'style', 'href'].some(a => /evil\.example/.test(e.getAttribute(a) ?? ''))
    );
    expect(r.node.textContent).toContain('Dry run');
    expect(remote.map(e => e.outerHTML)).toEqual([]);
  });
});
