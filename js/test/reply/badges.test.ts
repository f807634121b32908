import { describe, expect, it } from 'vitest';
import { isLive, replyBadges, toolMark } from '../../src/reply/badges';

describe('reply badges', () => {
  it('say how a reply ended, in words and icons', () => {
    const b = (status: string, extra = {}) => replyBadges({ status: status as any, reused: false, ...extra }).map(x => x.label);
    expect(b('done')).toEqual([]);
    expect(b('done', { reused: true })).toEqual(['reused']);
    expect(b('done', { kept: 'qwen3:8b' })).toEqual(['kept']);
    expect(replyBadges({ status: 'done', reused: false, kept: 'qwen3:8b' })[0].title).toContain('now answers with qwen3:8b');
    expect(b('interrupted')).toEqual(['interrupted']);
    expect(b('error')).toEqual(['failed']);
    expect(b('stalled')).toEqual(['timed out']);
    expect(b('broken')).toEqual(['connection lost']);
    expect(b('too long')).toEqual(['too long']);
    expect(b('done', { finish_reason: 'length' })).toEqual(['cut off']);
    expect(b('streaming')).toEqual(['streaming']);
    expect(replyBadges({ status: 'error', reused: false }).every(x => x.icon && x.title)).toBe(true);
  });

  it('isLive is waiting or streaming', () => {
    expect(['waiting', 'streaming', 'done', 'error'].map(isLive)).toEqual([true, true, false, false]);
  });
});

describe('tool marks', () => {
  it('ok ✓, flagged ⚠, refused or invalid ✗, not run ○', () => {
    expect(toolMark('ok')).toEqual({ icon: '✓', tone: 'success' });
    expect(toolMark('flagged')).toEqual({ icon: '⚠', tone: 'warn' });
    for (const s of ['refused', 'invalid args', 'unknown tool', 'crashed: ValueError', 'declined', 'repeat']) {
      expect(toolMark(s).icon).toBe('✗');
    }
    expect(toolMark('not run')).toEqual({ icon: '○', tone: 'muted' });
  });
});
