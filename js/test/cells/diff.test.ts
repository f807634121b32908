import { describe, expect, it } from 'vitest';
import { folded, IDiffLine, lineDiff, MAX_CELLS } from '../../src/cells/diff';
import { rng } from '../generate';

/** The text on one side of a diff (`del` lines are the old side's, `add` the new one's). */
function sideOf(diff: readonly IDiffLine[], side: 'before' | 'after'): string {
  const skip = side === 'before' ? 'add' : 'del';
  return diff
    .filter(d => d.kind !== skip)
    .map(d => d.text)
    .join('\n');
}

/** Texts of a few lines from a small alphabet (so lines repeat), with empty lines, markup and odd characters. */
function text(r: () => number): string {
  const words = ['x = 1', 'print(x)', '', '  return y', '<b>', '\t# note', '💥', 'x = 1 ', '\r', 'def f():'];
  const n = Math.floor(r() * 9);
  return Array.from({ length: n }, () => words[Math.floor(r() * words.length)]).join('\n');
}

describe('lineDiff', () => {
  it('shows a changed line as removed then added, the rest kept', () => {
    expect(lineDiff('a\nb\nc', 'a\nB\nc')).toEqual([
      { kind: 'same', text: 'a' },
      { kind: 'del', text: 'b' },
      { kind: 'add', text: 'B' },
      { kind: 'same', text: 'c' }
    ]);
    expect(lineDiff('', 'new')).toEqual([{ kind: 'add', text: 'new' }]);
    expect(lineDiff('gone', '')).toEqual([{ kind: 'del', text: 'gone' }]);
    expect(lineDiff('same', 'same')).toEqual([{ kind: 'same', text: 'same' }]);
  });

  it('gives back both texts exactly and keeps a longest common run, for generated pairs (1,000 seeds)', () => {
    for (let seed = 1; seed <= 1000; seed++) {
      const r = rng(seed);
      const a = text(r);
      const b = r() < 0.3 ? a : text(r);
      const d = lineDiff(a, b);
      expect(sideOf(d, 'before'), `seed ${seed}`).toBe(a);
      expect(sideOf(d, 'after'), `seed ${seed}`).toBe(b);
      if (a === b) {
        expect(d.every(l => l.kind === 'same')).toBe(true);
      }
      // folding hides only unchanged lines, and counts them
      const f = folded(d, 1);
      const hidden = f.reduce((n, l) => n + (l.kind === 'fold' ? l.count : 0), 0);
      expect(f.filter(l => l.kind !== 'fold').length + hidden).toBe(d.length);
      expect(f.filter(l => l.kind === 'add' || l.kind === 'del')).toEqual(d.filter(l => l.kind !== 'same'));
    }
  });

  it('shows a huge change as removed then added instead of comparing every pair of lines', () => {
    const n = Math.ceil(Math.sqrt(MAX_CELLS)) + 10;
    const a = Array.from({ length: n }, (_, i) => `a${i}`).join('\n');
    const b = Array.from({ length: n }, (_, i) => `b${i}`).join('\n');
    const d = lineDiff(`head\n${a}\ntail`, `head\n${b}\ntail`);
    expect(d.length).toBe(2 * n + 2);
    expect(d[1]).toEqual({ kind: 'del', text: 'a0' });
    expect(d[n + 1]).toEqual({ kind: 'add', text: 'b0' });
  });

  it('folds long unchanged runs to their ends', () => {
    const a = Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n');
    const b = a.replace('l10', 'L10');
    const f = folded(lineDiff(a, b), 2);
    expect(f[0]).toEqual({ kind: 'fold', count: 8 });
    expect(f.slice(1, 3).map(l => (l as { text: string }).text)).toEqual(['l8', 'l9']);
    expect(f[f.length - 1]).toEqual({ kind: 'fold', count: 7 });
  });
});
