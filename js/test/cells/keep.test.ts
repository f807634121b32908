import { describe, expect, it } from 'vitest';
import { awaitsReply, hasNewReply, keepable, restored } from '../../src/cells/keep';

const REPLY = 'application/vnd.boopiter.reply+json';
const reply = (over: object) => ({
  output_type: 'display_data', metadata: {},
  data: { [REPLY]: { version: 1, kind: 'reply', model: 'm', status: 'done', blocks: ['An answer.'], reasoning: '', ...over },
          'text/plain': 'An answer.' }
});
const SAVED = reply({});
const notFound = { output_type: 'stream', name: 'stderr', text: 'UsageError: Cell magic `%%prompt` not found.\n' };
const fault = { output_type: 'error', ename: 'OllamaUnreachable', evalue: 'down', traceback: ['OllamaUnreachable: down'] };
const emptyFailed = reply({ status: 'error', blocks: [] });

describe("a prompt cell's saved reply", () => {
  it('stands until a new reply exists', () => {
    expect(hasNewReply([SAVED as any])).toBe(true);
    expect(hasNewReply([reply({ status: 'streaming', blocks: ['Half'] }) as any])).toBe(true);   // text arrived
    expect(hasNewReply([reply({ status: 'interrupted', blocks: [], reasoning: 'Hmm' }) as any])).toBe(true);
    expect(hasNewReply([reply({ status: 'done', blocks: [] }) as any])).toBe(true);   // an empty answer is an answer
    expect(hasNewReply([{ output_type: 'display_data', metadata: {}, data: { [REPLY]: { kind: 'tool_round' } } } as any])).toBe(true);
    for (const nothing of [[], [notFound], [emptyFailed, fault], [reply({ status: 'waiting', blocks: [] })],
                           [reply({ status: 'interrupted', blocks: ['  '] })]]) {
      expect(hasNewReply(nothing as any)).toBe(false);
    }
  });

  it('comes back with the error after it when the run brought none', () => {
    expect(restored([SAVED as any], [notFound as any])).toEqual([SAVED, notFound]);           // magic not found
    expect(restored([SAVED as any], [emptyFailed as any, fault as any])).toEqual([SAVED, fault]);   // server down
    expect(restored([SAVED as any], [])).toEqual([SAVED]);
    const fresh = reply({ blocks: ['A new answer.'] });
    expect(restored([SAVED as any], [fresh as any])).toBeNull();                                // replaced: it stands
  });

  it('waits for a reply that streams on after its cell ended, and judges it once it has text or has ended', () => {
    const waiting = reply({ status: 'waiting', blocks: [] });
    expect(awaitsReply([waiting as any])).toBe(true);                                            // not judged yet
    expect(awaitsReply([reply({ status: 'streaming', blocks: [] }) as any])).toBe(true);
    expect(awaitsReply([reply({ status: 'streaming', blocks: ['Half'] }) as any])).toBe(false);   // it has text: it stands
    for (const ended of [SAVED, emptyFailed, reply({ status: 'interrupted', blocks: [] }), notFound]) {
      expect(awaitsReply([ended as any])).toBe(false);
    }
    expect(restored([SAVED as any], [emptyFailed as any, fault as any])).toEqual([SAVED, fault]);   // then as any run
  });

  it('keeps what is text or drawn by boopiter, never another kind of output', () => {
    const html = { output_type: 'display_data', metadata: {}, data: { 'text/html': '<img src=x onerror=alert(1)>' } };
    const binding = { output_type: 'display_data', metadata: {}, data: { 'application/vnd.boopiter.settings+json': {} } };
    expect(keepable([SAVED, html, notFound, binding, fault] as any)).toEqual([SAVED, notFound, binding, fault]);
  });
});
