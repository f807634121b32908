import { afterEach, describe, expect, it, vi } from 'vitest';
import { PendingRequests, requestId } from '../../src/channel/requests';

afterEach(() => {
  vi.useRealTimers();
});

describe('PendingRequests', () => {
  it('resolves a request with the answer that carries its id, once', async () => {
    const p = new PendingRequests<string>(1000);
    const a = p.wait('a');
    const b = p.wait('b');
    expect(p.settle('b', 'B')).toBe(true);
    expect(p.settle('a', 'A')).toBe(true);
    expect(p.settle('a', 'again')).toBe(false); // late or duplicate: ignored
    expect(p.settle('x', 'stray')).toBe(false);
    expect(await Promise.all([a, b])).toEqual(['A', 'B']);
    expect(p.size).toBe(0);
  });

  it('fails a request with no answer in time, and ignores the late answer', async () => {
    vi.useFakeTimers();
    const p = new PendingRequests<string>(30_000, 'dry run');
    const a = p.wait('a');
    vi.advanceTimersByTime(30_001);
    await expect(a).rejects.toThrow('no dry run from the kernel within 30 s');
    expect(p.settle('a', 'late')).toBe(false);
  });

  it('fails everything waiting when the kernel goes away', async () => {
    const p = new PendingRequests<string>(1000);
    const all = [p.wait('a'), p.wait('b')];
    p.failAll('the kernel restarted');
    for (const r of all) {
      await expect(r).rejects.toThrow('the kernel restarted');
    }
    expect(p.size).toBe(0);
  });
});

describe('requestId', () => {
  it('is new every time', () => {
    const ids = new Set(Array.from({ length: 1000 }, requestId));
    expect(ids.size).toBe(1000);
  });
});
