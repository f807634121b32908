import { describe, expect, it } from 'vitest';
import { cleanBinding, parseKernelMessage, parseMenuState, parseReplyBundle, parseWidgetPlaceholder } from '../../src/protocol/parse';

const STATE = {
  answering: { model: 'qwen3:8b', why: 'notebook binding', context_length: 40960, size: 5.2e9, reasoning: false },
  settings: { model: 'qwen3:8b', reasoning_model: '', reasoning: false, think: '', keep_alive: 5, context_size: 0, tools: '', auto: false, reuse: true },
  models: [
    { id: 'qwen3:8b', label: 'qwen3:8b', source: 'ollama', capabilities: ['tools', 'thinking'], size: 5.2e9 },
    { id: '', label: 'nameless' },
    'junk'
  ],
  problems: { endpoint: 'connection refused', bad: 3 },
  options: { keep_alive: [['default', ''], ['bad']], context_sizes: [2048, 'x'], efforts: [['auto', '']], tool_sources: [{ name: 'kernel', description: 'd', on: true }, { description: 'no name' }] },
  offered_tools: ['read_file', 3]
};

describe('parseKernelMessage', () => {
  it('reads a state, keeping only well-typed parts', () => {
    const msg = parseKernelMessage({ type: 'state', version: 1, state: STATE });
    expect(msg?.type).toBe('state');
    if (msg?.type !== 'state') return;
    expect(msg.state.models.map(m => m.id)).toEqual(['qwen3:8b']);
    expect(msg.state.problems).toEqual({ endpoint: 'connection refused' });
    expect(msg.state.settings.keep_alive).toBe('5');
    expect(msg.state.options.keep_alive).toEqual([['default', '']]);
    expect(msg.state.options.context_sizes).toEqual([2048]);
    expect(msg.state.options.tool_sources.map(t => t.name)).toEqual(['kernel']);
    expect(msg.state.offered_tools).toEqual(['read_file']);
  });

  it('reads a binding and an error, and refuses anything else', () => {
    expect(parseKernelMessage({ type: 'binding', binding: { model: 'x', evil: 1 } })).toEqual({ type: 'binding', binding: { model: 'x' } });
    expect(parseKernelMessage({ type: 'error', message: 'no' })).toEqual({ type: 'error', message: 'no' });
    expect(parseKernelMessage({ type: 'nope' })).toBeNull();
    expect(parseKernelMessage('state')).toBeNull();
    expect(parseKernelMessage({ type: 'state' })).toBeNull();
  });

  it('fills a partial state with empty defaults', () => {
    const s = parseMenuState({})!;
    expect(s.models).toEqual([]);
    expect(s.settings.reuse).toBe(false);
    expect(s.answering.model).toBe('');
  });
});

describe('cleanBinding', () => {
  it('keeps known keys of the right type, drops empty strings and bad values', () => {
    expect(
      cleanBinding({ model: 'm', reasoning: 'yes', think: 'x', context_size: 8192.7, tools: '', auto: true, picked_at: '2026-01-01T00:00:00Z', extra: 1 })
    ).toEqual({ model: 'm', context_size: 8192, auto: true, picked_at: '2026-01-01T00:00:00Z' });
    expect(cleanBinding({ think: 'off', context_size: -1 })).toEqual({ think: 'off' });
    expect(cleanBinding(null)).toEqual({});
    expect(cleanBinding([1])).toEqual({});
  });
});

describe('parseReplyBundle', () => {
  it('reads a reply with defaults for missing fields', () => {
    const r = parseReplyBundle({ kind: 'reply', model: 'm', status: 'streaming', blocks: ['hi'], finish_reason: 'length', details: ['a', 2] });
    expect(r).toMatchObject({ kind: 'reply', status: 'streaming', blocks: ['hi'], open: false, reasoning: '', reused: false, finish_reason: 'length', details: ['a'] });
  });

  it("reads the kernel's blocks as they are, and an older reply's whole Markdown as one block, never split", () => {
    const blocks = (data: object) => (parseReplyBundle({ kind: 'reply', ...data }) as { blocks: string[] }).blocks;
    expect(blocks({ blocks: ['- ```\n  x\n  ```\n\n  y', 2, null, '', '  ', 'z'], markdown: 'ignored' })).toEqual(['- ```\n  x\n  ```\n\n  y', 'z']);
    expect(blocks({ markdown: 'a\n\n```\n<img src=http://evil.example/x>\n```\n\nb' })).toEqual(['a\n\n```\n<img src=http://evil.example/x>\n```\n\nb']);
    expect(blocks({ markdown: '  \n' })).toEqual([]);
    expect(blocks({ blocks: 'not a list', markdown: 7 })).toEqual([]);
    expect((parseReplyBundle({ kind: 'reply', blocks: ['```\nx\n```'], open: 'yes' }) as { open: boolean }).open).toBe(false);
    expect((parseReplyBundle({ kind: 'reply', blocks: ['```\nx\n```'], open: true }) as { open: boolean }).open).toBe(true);
  });

  it('reads tool rounds and loops', () => {
    const t = parseReplyBundle({ kind: 'tool_round', round: 2, steps: [{ status: 'ok', source: 'f()', result: '1', flags: ['x'], recovered: true }, 5] });
    expect(t).toEqual({ version: 1, kind: 'tool_round', round: 2, steps: [{ status: 'ok', source: 'f()', result: '1', flags: ['x'], recovered: true }] });
    const l = parseReplyBundle({ kind: 'tool_loop', stop: 'answered', rounds: 2, steps: [{ round: 1, source: 'f()', status: 'ok' }] });
    expect(l).toMatchObject({ kind: 'tool_loop', stop: 'answered', note: '', rounds: 2 });
  });

  it('is null for what is not an object', () => {
    expect(parseReplyBundle('x')).toBeNull();
    expect(parseReplyBundle(null)).toBeNull();
  });
});

describe('preview, edit and widget messages', () => {
  it('reads a dry run answer by its id', () => {
    expect(parseKernelMessage({ type: 'preview', id: 'p1', markdown: '*m*', text: 't', extra: 1 })).toEqual({
      type: 'preview',
      id: 'p1',
      markdown: '*m*',
      text: 't'
    });
    expect(parseKernelMessage({ type: 'preview', id: 'p1', markdown: 3 })).toEqual({ type: 'preview', id: 'p1', markdown: '', text: '' });
    expect(parseKernelMessage({ type: 'preview', markdown: 'x' })).toBeNull(); // nothing to match it to
  });

  it('reads the two edits, and turns a bad one into a refusal it can answer', () => {
    expect(parseKernelMessage({ type: 'edit', id: 'e', op: 'add', after: 'c1', source: 's', cell_type: 'markdown' })).toEqual({
      type: 'edit',
      id: 'e',
      op: 'add',
      after: 'c1',
      source: 's',
      cell_type: 'markdown'
    });
    expect(parseKernelMessage({ type: 'edit', id: 'e', op: 'edit', cell: 'c1', source: 's', expect: 'old' })).toMatchObject({
      op: 'edit',
      cell: 'c1',
      expect: 'old'
    });
    expect(parseKernelMessage({ type: 'edit', id: 'e', op: 'edit', cell: 'c1', source: 's' })).toEqual({
      type: 'edit',
      id: 'e',
      op: 'invalid',
      problem: '`expect` must be text'
    });
    expect(parseKernelMessage({ type: 'edit', id: 'e', op: 'add', after: 1, source: 's' })).toMatchObject({ op: 'invalid' });
    expect(parseKernelMessage({ type: 'edit', id: 'e' })).toMatchObject({ op: 'invalid', problem: 'unknown op null' });
    expect(parseKernelMessage({ type: 'edit', op: 'add', after: 'c', source: '' })).toBeNull(); // no id: nothing to answer
  });

  it('ignores the announce a kernel opens its comm with', () => {
    expect(parseKernelMessage({ type: 'announce', version: 1 })).toBeNull();
  });

  it('reads a widget placeholder', () => {
    expect(parseWidgetPlaceholder({ version: 1, kind: 'menu' })).toEqual({ version: 1, kind: 'menu' });
    expect(parseWidgetPlaceholder({ kind: 'code_actions' })).toEqual({ version: 1, kind: 'code_actions' });
    expect(parseWidgetPlaceholder({ version: 1 })).toBeNull();
    expect(parseWidgetPlaceholder('menu')).toBeNull();
  });
});

describe('interim reply updates', () => {
  it('need no text/markdown and keep the prompt cell id', () => {
    const interim = parseReplyBundle({ version: 1, kind: 'reply', model: 'm', status: 'streaming', cell_id: 'c7' });
    expect(interim).toMatchObject({ kind: 'reply', status: 'streaming', blocks: [], cell_id: 'c7', details: [] });
    expect(parseReplyBundle({ kind: 'reply', status: 'done', blocks: ['x'], cell_id: '' })).not.toHaveProperty('cell_id');
  });
});
