// @vitest-environment jsdom
/// <reference types="node" />
/**
 * The page's half of the protocol against its schema (`boopiter_ext/faces/protocol.schema.json`): its readers take
 * every kernel message and bundle whole (no field dropped or renamed), and every message its channel builds is one the
 * schema allows. Alone (`npm test`), on instances made from the schema; run by tests/test_protocol_schema.py, also on
 * the messages and bundles the kernel's own code made (`$BOOPITER_WIRE/kernel.json`), and the messages built here go
 * back to it (`$BOOPITER_WIRE/frontend.json`) for the kernel's handler to read.
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Signal } from '@lumino/signaling';
import { describe, expect, it, vi } from 'vitest';
import { BoopChannel } from '../../src/channel/channel';
import { fakeContext, fakeKernel } from '../channel/context';
import { PREVIEW_MIME, parsePreview } from '../../src/dryrun/inline';
import { cleanBinding, parseKernelMessage, parseReplyBundle, parseWidgetPlaceholder } from '../../src/protocol/parse';
import { REPLY_MIME, SETTINGS_MIME, WIDGET_MIME } from '../../src/protocol/constants';
import { DEFS, defsOf, example, ignored, losses, problems } from './schema';

// the dry run's renderer module, for its reader alone: what it draws with is not needed here (nor loadable in jsdom,
// which has no DragEvent for lumino's widgets to extend)
vi.hoisted(() => {
  const g = globalThis as any;
  g.DragEvent ??= class extends g.MouseEvent {};
});
vi.mock('@jupyterlab/apputils', () => ({ Clipboard: {} }));
vi.mock('@jupyterlab/rendermime', () => ({ renderMarkdown: () => Promise.resolve() }));

const WIRE = process.env.BOOPITER_WIRE ?? '';

/** The page's reader of each kernel message and bundle; null: the page reads nothing of it. */
const READERS: { [name: string]: ((v: unknown) => unknown) | null } = {
  // the comm the kernel opens is the news (link.ts adopts it and says hello); its data names no state
  'kernel.announce': null,
  'kernel.state': parseKernelMessage,
  'kernel.binding': parseKernelMessage,
  'kernel.preview': parseKernelMessage,
  'kernel.edit_add': parseKernelMessage,
  'kernel.edit_edit': parseKernelMessage,
  'kernel.edit_delete': parseKernelMessage,
  'kernel.edit_run': parseKernelMessage,
  'kernel.edit_cancel': parseKernelMessage,
  'kernel.error': parseKernelMessage,
  'kernel.completion': parseKernelMessage,
  'kernel.rewrite': parseKernelMessage,
  'bundle.reply': parseReplyBundle,
  'bundle.tool_round': parseReplyBundle,
  'bundle.tool_loop': parseReplyBundle,
  'bundle.settings': cleanBinding,
  'bundle.widget': parseWidgetPlaceholder,
  'bundle.preview': parsePreview
};

/** `value` without the fields the page does not read. */
function readable(name: string, value: unknown): unknown {
  const copy = { ...(value as object) } as { [k: string]: unknown };
  for (const k of ignored(name)) {
    delete copy[k];
  }
  return copy;
}

describe('the schema', () => {
  it('names the mime types the page renders', () => {
    const mimes = defsOf('bundle').map(n => DEFS[n]['x-mime']);
    expect(new Set(mimes)).toEqual(new Set([REPLY_MIME, SETTINGS_MIME, WIDGET_MIME, PREVIEW_MIME]));
  });

  it('has a reader for every kernel message and bundle', () => {
    expect(Object.keys(READERS).sort()).toEqual([...defsOf('kernel'), ...defsOf('bundle')].sort());
  });

  it('is what its checker says: a renamed field fails', () => {
    const msg = example('kernel.preview') as { [k: string]: unknown };
    expect(problems('kernel.preview', msg)).toEqual([]);
    const { markdown, ...rest } = msg;
    expect(problems('kernel.preview', { ...rest, md: markdown })).toEqual([
      '(top): `markdown` is missing',
      '(top): `md` is not a field of it'
    ]);
    expect(problems('kernel', { ...rest, md: markdown }).length).toBeGreaterThan(0);
  });
});

describe('the readers', () => {
  for (const name of [...defsOf('kernel'), ...defsOf('bundle')]) {
    it(`read ${name} with every field`, () => {
      const sent = example(name);
      expect(problems(name, sent)).toEqual([]); // the generator makes what the schema allows
      const read = READERS[name];
      if (read === null) {
        expect(parseKernelMessage(sent)).toBeNull();
        return;
      }
      expect(read(sent)).toEqual(readable(name, sent)); // nothing dropped, renamed or added
    });
  }

  it('tell a renamed field', () => {
    const msg = example('kernel.preview') as { [k: string]: unknown };
    const { markdown, ...rest } = msg;
    expect(losses(parseKernelMessage({ ...rest, md: markdown }), msg)).toEqual(['/markdown: "markdown text" read as ""']);
  });

  it.runIf(WIRE)('reads every message and bundle the kernel made, whole', () => {
    const made: { [name: string]: unknown[] } = JSON.parse(readFileSync(join(WIRE, 'kernel.json'), 'utf8'));
    expect(Object.keys(made).sort()).toEqual(Object.keys(READERS).sort());
    const lost: string[] = [];
    for (const [name, instances] of Object.entries(made)) {
      for (const sent of instances) {
        const read = READERS[name];
        if (read === null) {
          expect(parseKernelMessage(sent)).toBeNull();
          continue;
        }
        lost.push(...losses(read(sent), readable(name, sent)).map(l => `${name} ${l}`));
      }
    }
    expect(lost).toEqual([]);
  });
});

// ---- what the page's channel builds

/** A shared cell: its text, its tags, and the signal the channel follows. */
class CellStub {
  constructor(
    readonly id: string,
    readonly cell_type: string,
    private _source: string,
    private _tags: string[] = []
  ) {}
  readonly changed = new Signal<this, { sourceChange?: unknown; metadataChange?: unknown }>(this);
  getSource(): string {
    return this._source;
  }
  getMetadata(key: string): unknown {
    return key === 'tags' ? this._tags : undefined;
  }
  updateSource(start: number, end: number, value = ''): void {
    this._source = this._source.slice(0, start) + value + this._source.slice(end);
    this.changed.emit({ sourceChange: true });
  }
}

/** A comm whose messages land in `sent`, on a subshell (so Stop goes out). */
class CommStub {
  constructor(private sent: unknown[]) {}
  isDisposed = false;
  subshellId = 'subshell-1';
  onMsg: ((msg: unknown) => void) | null = null;
  onClose: ((msg: unknown) => void) | null = null;
  open(data: unknown): void {
    this.sent.push(data);
  }
  send(data: unknown): void {
    this.sent.push(data);
  }
  close(): void {
    this.isDisposed = true;
  }
  answer(data: unknown): void {
    this.onMsg?.({ content: { data } });
  }
}

const flush = () => new Promise<void>(resolve => setTimeout(resolve, 0));

/** Every kind of message the channel sends, made as a user's notebook makes them. */
async function frontendMessages(): Promise<unknown[]> {
  const sent: unknown[] = [];
  const comm = new CommStub(sent);
  const cells = [
    new CellStub('c1', 'code', 'total = 1234 * 2', ['boop-pin']),
    new CellStub('m1', 'markdown', '# Notes\nThe total is wrong.'),
    new CellStub('r1', 'raw', 'not for the kernel'),
    new CellStub('p1', 'code', '%%prompt\nFix the total')
  ];
  const notebook = {
    cells,
    changed: new Signal<unknown, { cellsChange?: unknown }>({}),
    transact: (f: () => void) => f(),
    insertCell: () => {
      throw new Error('no add here');
    },
    undoManager: null
  };
  const metadata: { [k: string]: unknown } = {
    boopiter: { binding: { model: 'qwen3:1.7b', think: 'h', keep_alive: '-1', context_size: 8192, picked_at: new Date().toISOString() } }
  };
  const kernel = fakeKernel({ createComm: () => comm });
  const context = fakeContext(notebook, kernel, metadata);
  const channel = new BoopChannel(context as any);
  await flush(); // the hello
  comm.answer({ type: 'state', version: 1, state: {} });
  await flush();
  expect(channel.state.phase).toBe('ready');
  cells[1].updateSource(cells[1].getSource().length, cells[1].getSource().length, ' It is 1234 * 3.'); // typed, unsaved
  channel.sendCells();
  channel.pick({ keep_alive: '-1', context_size: 8192, think: 'h', reasoning_model: null });
  channel.refresh();
  channel.allow(['auto', 'web']);
  const dry = channel.preview('%%prompt\nWhat is the total?');
  const asked = sent.at(-1) as { id: string };
  comm.answer({ type: 'preview', id: asked.id, markdown: '*Dry run*', text: 'Dry run' });
  await dry;
  expect(channel.stop('c1')).toBe(true);
  expect(channel.fresh('c1')).toBe(true);
  const ghost = channel.complete('c1', 'total = 1234 ', '\nprint(total)');
  comm.answer({ type: 'completion', id: (sent.at(-1) as { id: string }).id, text: '* 2', reason: '' });
  expect(await ghost).toEqual({ text: '* 2', reason: '' });
  const rewrite = channel.rewrite('c1', 'double it', 'total = 1234 * 2');
  comm.answer({ type: 'rewrite', id: (sent.at(-1) as { id: string }).id, source: 'total = 1234 * 4', reason: '' });
  expect(await rewrite).toEqual({ source: 'total = 1234 * 4', reason: '' });
  // a view of the notebook, where the user reviews an edit: its first cell's node
  const cellNode = document.createElement('div');
  document.body.append(cellNode);
  const signal = { connect: () => undefined, disconnect: () => undefined };
  const widget = { model: { id: 'c1' }, node: cellNode, addClass: () => undefined, removeClass: () => undefined, disposed: signal };
  const view = { content: { widgets: [widget], scrollToItem: () => undefined }, disposed: { connect: () => undefined } };
  channel.addView(view as any);
  comm.answer({ type: 'edit', id: 'e1', op: 'edit', cell: 'c1', source: 'total = 1234 * 3', expect: 'total = 1234 * 2', prompt: 'p1' });
  await flush();
  (cellNode.querySelector('.boop-Review-accept') as HTMLButtonElement).click(); // the user accepts the diff
  await flush();
  comm.answer({ type: 'edit', id: 'e2', op: 'edit', cell: 'c1', source: 'total = 0', expect: 'total = 1234 * 2' });
  await flush();
  channel.dispose();
  return sent;
}

function kindOf(msg: unknown): string {
  const m = msg as { type: string; op?: string };
  return `frontend.${m.type}`;
}

describe("the page's channel", () => {
  it('builds every kind of message, each one the schema allows', async () => {
    const sent = await frontendMessages();
    const byKind: { [name: string]: unknown[] } = {};
    for (const msg of sent) {
      (byKind[kindOf(msg)] ??= []).push(msg);
    }
    expect(Object.keys(byKind).sort()).toEqual(defsOf('frontend'));
    const bad = sent.flatMap(m => problems(kindOf(m), m).map(p => `${kindOf(m)} ${p}`));
    expect(bad).toEqual([]);
    // what the user did is in them: the unsaved typing, the refused edit
    const notebook = byKind['frontend.notebook'][0] as { cells: { id: string; source: string }[] };
    expect(notebook.cells.map(c => c.id)).toEqual(['c1', 'm1', 'p1']);
    expect(notebook.cells[1].source).toMatch(/It is 1234 \* 3\.$/);
    const results = byKind['frontend.edit_result'] as { id: string; ok: boolean }[];
    expect(results.map(r => [r.id, r.ok])).toEqual([
      ['e1', true],
      ['e2', false] // the cell holds what the first edit wrote, not what this one expects
    ]);
    if (WIRE) {
      writeFileSync(join(WIRE, 'frontend.json'), JSON.stringify(byKind));
    }
  });
});
