// @vitest-environment jsdom
import { describe, expect, it, vi } from 'vitest';
import { ReplyData } from '../../src/protocol/bundles';
import { parseReplyBundle } from '../../src/protocol/parse';
import { IReplyActions, ReplyView } from '../../src/reply/view';

const STALE = 'Stale: since this reply, In [4] `nums.append(4)` is new or ran. Kept as it was; run `%%prompt --fresh` to ask again.';

function reply(extra: { [k: string]: unknown } = {}): ReplyData {
  return parseReplyBundle({ kind: 'reply', model: 'm', status: 'done', blocks: ['nums[::-1]'], summary: 'm', details: ['row'],
                            ...extra }) as ReplyData;
}

function makeView(actions: IReplyActions | null) {
  const view = new ReplyView({
    renderMarkdown: (host, source) => {
      host.textContent = source;
      return Promise.resolve();
    },
    actions: () => actions,
    copy: () => undefined
  });
  document.body.append(view.node);
  return view;
}

const mark = (view: ReplyView) => view.node.querySelector('.boop-Reply-stale') as HTMLElement | null;

describe('a stale reply', () => {
  it('shows what changed above the answer, with one Ask again that asks the kernel', async () => {
    const fresh = vi.fn(() => Promise.resolve(true));
    const view = makeView({ insert: () => Promise.resolve(), stop: () => Promise.resolve(), fresh });
    await view.update(reply({ stale: STALE }));
    expect(view.node.firstElementChild).toBe(mark(view));
    expect(mark(view)!.hidden).toBe(false);
    const text = mark(view)!.querySelector('.boop-Reply-staleText')!;
    expect(text.textContent).toBe(STALE.replace(/`/g, ''));
    expect(Array.from(text.querySelectorAll('code')).map(c => c.textContent)).toEqual(['nums.append(4)', '%%prompt --fresh']);
    const button = mark(view)!.querySelector('button[data-boop-action="fresh"]') as HTMLButtonElement;
    expect(button.textContent).toBe('Ask again');
    button.click();
    expect(fresh).toHaveBeenCalledTimes(1);
    await view.update(reply()); // the fresh answer: no mark any more
    expect(mark(view)!.hidden).toBe(true);
  });

  it('says how to ask where the kernel cannot hear the click', async () => {
    const view = makeView(null);
    await view.update(reply({ stale: STALE }));
    const button = mark(view)!.querySelector('button') as HTMLButtonElement;
    button.click();
    expect(button.textContent).toContain('Run %%prompt --fresh');
  });

  it('keeps the replaced answer folded below, as text only', async () => {
    const view = makeView(null);
    const answer = '<img src=x onerror="alert(1)"> nums[::-1]';
    await view.update(reply({ previous: { model: 'qwen3:1.7b', answer } }));
    const prev = view.node.querySelector('details.boop-Reply-previous') as HTMLDetailsElement;
    expect(view.node.lastElementChild).toBe(prev);
    expect(prev.open).toBe(false);
    expect(prev.querySelector('summary')!.textContent).toBe('Previous answer · qwen3:1.7b');
    expect(prev.querySelector('pre')!.textContent).toBe(answer);
    expect(view.node.querySelector('img')).toBeNull();
    expect(reply({ previous: { model: 1, answer: '' } }).previous).toBeUndefined(); // nothing to recover: none
  });
});
