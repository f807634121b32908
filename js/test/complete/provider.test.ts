/**
 * The ghost-text provider: what it asks the kernel for, and which answers it shows (the newest request's only).
 */

import { describe, expect, it } from 'vitest';
import { BoopInlineProvider } from '../../src/complete/provider';
import type { ICompletion } from '../../src/protocol/messages';

const NOTEBOOK = {} as any;
const context = (widget: unknown = NOTEBOOK) => ({ widget, triggerKind: 0 }) as any;

/** A provider whose kernel answers when told, recording what it was asked. */
function provider(codeCell = true) {
  const asked: [string, string][] = [];
  const answers: ((a: ICompletion) => void)[] = [];
  const p = new BoopInlineProvider((widget, prefix, suffix) => {
    if (widget !== NOTEBOOK || !codeCell) {
      return null;
    }
    asked.push([prefix, suffix]);
    return new Promise(resolve => answers.push(resolve));
  });
  return { p, asked, answers };
}

describe('the ghost-text provider', () => {
  it('asks with the text before and after the cursor, and shows the answer', async () => {
    const { p, asked, answers } = provider();
    const got = p.fetch({ text: 'def add(a, b):\n    return \nprint(add(1, 2))', offset: 26 }, context());
    expect(asked).toEqual([['def add(a, b):\n    return ', '\nprint(add(1, 2))']]);
    answers[0]({ text: 'a + b', reason: '' });
    expect(await got).toEqual({ items: [{ insertText: 'a + b' }] });
  });

  it('shows only the newest request: an answer that comes late is dropped', async () => {
    const { p, answers } = provider();
    const first = p.fetch({ text: 'x = ', offset: 4 }, context());
    const second = p.fetch({ text: 'x = 1', offset: 5 }, context());
    answers[0]({ text: 'stale', reason: '' });
    answers[1]({ text: ' + 1', reason: '' });
    expect(await first).toEqual({ items: [] });
    expect(await second).toEqual({ items: [{ insertText: ' + 1' }] });
  });

  it('asks nothing in a prompt cell, an empty line, or where there is no code cell', async () => {
    const { p, asked } = provider();
    for (const [text, offset] of [['%%prompt\nWhy?', 13], ['   ', 3]] as [string, number][]) {
      expect(await p.fetch({ text, offset }, context())).toEqual({ items: [] });
    }
    expect(await p.fetch({ text: 'x = ', offset: 4 }, context({}))).toEqual({ items: [] });
    expect(asked).toEqual([]);
    const md = provider(false);
    expect(await md.p.fetch({ text: 'x = ', offset: 4 }, context())).toEqual({ items: [] });
  });

  it('shows nothing, quietly, when there is no answer or the kernel goes', async () => {
    const { p, answers } = provider();
    const none = p.fetch({ text: 'x = ', offset: 4 }, context());
    answers[0]({ text: '', reason: 'a prompt is using the model' });
    expect(await none).toEqual({ items: [] });
    const failing = new BoopInlineProvider(() => Promise.reject(new Error('the kernel went away')));
    expect(await failing.fetch({ text: 'x = ', offset: 4 }, context())).toEqual({ items: [] });
    expect(p.schema.default.debouncerDelay).toBeGreaterThan(0); // nothing asked while one types faster than this
  });
});
