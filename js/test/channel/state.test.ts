import { describe, expect, it } from 'vitest';
import { ChannelEvent, ChannelState, effectiveSettings, INITIAL, reduce, withBinding } from '../../src/channel/state';
import { MenuState } from '../../src/protocol/messages';
import { parseMenuState } from '../../src/protocol/parse';

const MENU: MenuState = parseMenuState({
  answering: { model: 'a', why: 'auto', reasoning: false },
  settings: { model: '', reasoning_model: 'r', reasoning: false, think: '', keep_alive: '', context_size: 8192, tools: '', auto: false, reuse: true },
  models: [{ id: 'a', label: 'a', source: 'ollama', capabilities: [] }]
})!;

const run = (...events: ChannelEvent[]): ChannelState => events.reduce(reduce, INITIAL);
const state: ChannelEvent = { type: 'message', msg: { type: 'state', version: 1, state: MENU } };

describe('reduce', () => {
  it('goes from no kernel to ready through hello and a state', () => {
    expect(run().phase).toBe('nokernel');
    expect(run({ type: 'kernel', present: true }).phase).toBe('connecting');
    expect(run({ type: 'kernel', present: true }, { type: 'hello' }, state)).toMatchObject({ phase: 'ready', menu: MENU });
  });

  it('says absent when the hello comm is closed, and loads', () => {
    const absent = run({ type: 'kernel', present: true }, { type: 'hello' }, { type: 'closed' });
    expect(absent.phase).toBe('absent');
    expect(reduce(absent, { type: 'load' }).phase).toBe('loading');
    expect(reduce(reduce(absent, { type: 'load' }), { type: 'load-failed', error: 'boom' })).toMatchObject({ phase: 'absent', error: 'boom' });
    expect(reduce(reduce(absent, { type: 'load' }), { type: 'loaded' }).phase).toBe('connecting');
  });

  it('keeps the last menu while reconnecting after a restart, drops it when boopiter is gone', () => {
    const ready = run({ type: 'kernel', present: true }, state);
    const restarting = reduce(ready, { type: 'kernel', present: true });
    expect(restarting).toMatchObject({ phase: 'connecting', menu: MENU });
    expect(reduce(restarting, { type: 'closed' })).toMatchObject({ phase: 'absent', menu: null });
    expect(reduce(ready, { type: 'kernel', present: false })).toEqual(INITIAL);
  });

  it('shows picks at once and forgets each when the kernel answers it', () => {
    const ready = run({ type: 'kernel', present: true }, state);
    const picked = reduce(reduce(ready, { type: 'pick', changes: { model: 'a' } }), { type: 'pick', changes: { think: 'h' } });
    expect(picked.pending).toEqual([{ model: 'a' }, { think: 'h' }]);
    expect(effectiveSettings(picked)).toMatchObject({ model: 'a', think: 'h' });
    // the state answering the first pick (think still as it was) leaves the second one showing
    const first = reduce(picked, { type: 'message', msg: { type: 'state', version: 1, state: { ...MENU, settings: { ...MENU.settings, model: 'a' } } } });
    expect(first.pending).toEqual([{ think: 'h' }]);
    expect(effectiveSettings(first)).toMatchObject({ model: 'a', think: 'h' });
    expect(reduce(first, state).pending).toEqual([]);
    expect(reduce(picked, { type: 'message', msg: { type: 'error', message: 'no' } }).pending).toEqual([]); // refused: all
    expect(reduce(run(), { type: 'pick', changes: { model: 'a' } }).pending).toEqual([]); // nothing to pick on
  });

  it('shows a removed pick as the empty value of its type', () => {
    const ready = run({ type: 'kernel', present: true }, state);
    const s = effectiveSettings(reduce(ready, { type: 'pick', changes: { reasoning_model: null, context_size: null, reuse: null } }))!;
    expect([s.reasoning_model, s.context_size, s.reuse]).toEqual(['', 0, false]);
  });

  it('keeps errors until the next state', () => {
    const ready = run({ type: 'kernel', present: true }, state);
    const failed = reduce(ready, { type: 'message', msg: { type: 'error', message: 'unknown model' } });
    expect(failed).toMatchObject({ phase: 'ready', error: 'unknown model' });
    expect(reduce(failed, state).error).toBe('');
  });

  it('marks kernels that are not Python', () => {
    expect(run({ type: 'kernel', present: true }, { type: 'unsupported', language: 'R' })).toMatchObject({ phase: 'unsupported', language: 'R' });
  });
});

describe('withBinding', () => {
  it('replaces the binding, removes an empty one and keeps other keys', () => {
    expect(withBinding(undefined, { model: 'm' })).toEqual({ binding: { model: 'm' } });
    expect(withBinding({ binding: { model: 'm' }, other: 1 }, {})).toEqual({ other: 1 });
    expect(withBinding('junk', {})).toEqual({});
  });
});
