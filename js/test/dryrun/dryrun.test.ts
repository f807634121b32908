// @vitest-environment jsdom
import { describe, expect, it, vi } from 'vitest';
import { DryRunBody } from '../../src/dryrun/dryrun';

/** A stand-in for Jupyter's renderMarkdown (untrusted): the source as text in a paragraph. */
const fakeMarkdown = vi.fn(async (host: HTMLElement, source: string) => {
  const p = document.createElement('p');
  p.textContent = source;
  host.append(p);
});

describe('DryRunBody', () => {
  it('says it is building, then renders the Markdown the kernel sent', async () => {
    const copy = vi.fn();
    const body = new DryRunBody({ renderMarkdown: fakeMarkdown, copy });
    expect(body.state).toBe('loading');
    expect(body.node.textContent).toMatch(/Building the dry run/);
    await body.show({ markdown: '*Dry run: nothing was sent.*', text: 'Dry run: nothing was sent.' });
    expect(body.state).toBe('done');
    expect(fakeMarkdown).toHaveBeenLastCalledWith(expect.any(HTMLElement), '*Dry run: nothing was sent.*');
    expect(body.node.querySelector('.boop-DryRun-content')!.textContent).toBe('*Dry run: nothing was sent.*');
    const button = body.node.querySelector<HTMLButtonElement>('.boop-DryRun-copy')!;
    button.click();
    expect(copy).toHaveBeenCalledWith('Dry run: nothing was sent.');
    expect(button.textContent).toBe('Copied');
  });

  it('keeps every message folded in a cell, and opens them in the dialog (the context ledger stays folded)', async () => {
    // what Jupyter's renderer makes of the kernel's Markdown: the ledger, then one fold per message
    const folds = async (host: HTMLElement) => {
      for (const label of ['Context: 3 cells', 'system · ~3 tokens', 'user · ~4 tokens']) {
        const d = document.createElement('details');
        const s = document.createElement('summary');
        s.textContent = label;
        d.append(s, document.createElement('pre'));
        host.append(d);
      }
    };
    const opened = async (expand: boolean) => {
      const body = new DryRunBody({ renderMarkdown: folds, expand });
      await body.show({ markdown: 'the dry run', text: '' });
      return Array.from(body.node.querySelectorAll('details'), d => d.open);
    };
    expect(await opened(false)).toEqual([false, false, false]);
    expect(await opened(true)).toEqual([false, true, true]);
  });

  it('shows the plain text when there is no Markdown or it fails to render', async () => {
    const body = new DryRunBody({ renderMarkdown: fakeMarkdown });
    await body.show({ markdown: '', text: 'plain <b>text</b>' });
    expect(body.node.querySelector('pre')!.textContent).toBe('plain <b>text</b>');
    expect(body.node.querySelector('b')).toBeNull();
    expect(body.node.querySelector('.boop-DryRun-copy')).toBeNull(); // no clipboard given
    const failing = new DryRunBody({ renderMarkdown: () => Promise.reject(new Error('parser')) });
    await failing.show({ markdown: '# x', text: 'the text' });
    expect(failing.node.querySelector('pre')!.textContent).toBe('the text');
  });

  it('says why there is no dry run, and draws nothing once closed', async () => {
    const body = new DryRunBody({ renderMarkdown: fakeMarkdown });
    body.fail(new Error('no dry run from the kernel within 60 s'));
    expect(body.state).toBe('failed');
    expect(body.node.textContent).toBe('No dry run: no dry run from the kernel within 60 s');
    const closed = new DryRunBody({ renderMarkdown: fakeMarkdown });
    closed.dispose();
    await closed.show({ markdown: 'late', text: 'late' });
    expect(closed.state).toBe('loading');
  });
});
