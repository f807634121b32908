import { describe, expect, it } from 'vitest';
import { BlockTracker, mayRerender, openFenceBody, splitBlocks } from '../../src/reply/blocks';

const texts = (s: string) => splitBlocks(s).map(b => s.slice(b.start, b.end));

const DOC = [
  '# Title',
  '',
  'A paragraph\nover two lines.',
  '',
  '```python\nx = 1\n\n\ny = 2\n```',
  '',
  '- one\n- two',
  '',
  '- three, after a blank line',
  '',
  '   indented continuation',
  '',
  '$$\na = b\n\nc = d\n$$',
  '',
  '~~~~\n```\nnot closed by backticks\n\n~~~\n~~~~',
  '',
  '1. first',
  '',
  '2. second',
  '',
  'Last words with `inline ``` code`.'
].join('\n');

describe('splitBlocks', () => {
  it('cuts at blank lines outside fences and math', () => {
    expect(texts('a\n\nb\n\n\nc')).toEqual(['a', 'b', 'c']);
    expect(texts('```\na\n\nb\n```\n\nc')).toEqual(['```\na\n\nb\n```', 'c']);
    expect(texts('$$\na\n\nb\n$$\n\nc')).toEqual(['$$\na\n\nb\n$$', 'c']);
  });

  it('keeps lists, indented lines and lazy continuations together', () => {
    expect(texts('- a\n\n- b\n\n  more b\n\nafter')).toEqual(['- a\n\n- b\n\n  more b', 'after']);
    expect(texts('para\n\n    indented code\n\nnext')).toEqual(['para\n\n    indented code', 'next']);
    expect(texts('1. a\n\n2. b')).toEqual(['1. a\n\n2. b']);
  });

  it('closes a fence only with the same character, at least as long', () => {
    const b = splitBlocks('~~~~\n```\n\n~~~\nstill code\n~~~~\n\nout');
    expect(b.map(x => x.kind)).toEqual(['fence', 'text']);
    expect(b[0].open).toBe(false);
  });

  it('marks a block whose fence or math is still open', () => {
    const b = splitBlocks('intro\n\n```js\nlet a = 1;\n\n');
    expect(b.map(x => [x.kind, x.open])).toEqual([['text', false], ['fence', true]]);
    expect(splitBlocks('$$\nx')[0]).toMatchObject({ kind: 'math', open: true });
    expect(splitBlocks('$$ x $$\n\ny').length).toBe(2);
  });

  it('does not take inline code with triple backticks for a fence', () => {
    expect(texts('```x```\n\nnext')).toEqual(['```x```', 'next']);
  });

  it('covers a whole document: blocks are in order, disjoint, and only blank lines lie between them', () => {
    const blocks = splitBlocks(DOC);
    let at = 0;
    for (const b of blocks) {
      expect(DOC.slice(at, b.start).trim()).toBe('');
      expect(b.end).toBeGreaterThan(b.start);
      at = b.end;
    }
    expect(DOC.slice(at).trim()).toBe('');
    expect(blocks.map(b => b.kind)).toEqual(['text', 'text', 'fence', 'list', 'math', 'fence', 'list', 'text']);
  });

  it('handles an empty text, blank lines only and a missing final newline', () => {
    expect(splitBlocks('')).toEqual([]);
    expect(splitBlocks('\n\n  \n')).toEqual([]);
    expect(texts('a')).toEqual(['a']);
  });
});

describe('BlockTracker', () => {
  it('gives the blocks of a full scan after every step of a growing text', () => {
    const tracker = new BlockTracker();
    for (let n = 0; n <= DOC.length; n += 1) {
      const text = DOC.slice(0, n);
      const { blocks } = tracker.update(text);
      expect(blocks).toEqual(splitBlocks(text));
    }
  });

  it('says which leading blocks did not change', () => {
    const tracker = new BlockTracker();
    let prev: string[] = [];
    for (let n = 0; n <= DOC.length; n += 7) {
      const text = DOC.slice(0, n);
      const { blocks, stable } = tracker.update(text);
      const now = blocks.map(b => text.slice(b.start, b.end));
      for (let i = 0; i < stable; i++) {
        expect(now[i]).toBe(prev[i]);
      }
      prev = now;
    }
  });

  it('keeps only the last block (and a list before it) unsettled while text is appended', () => {
    const tracker = new BlockTracker();
    tracker.update('a\n\nb\n\nc');
    expect(tracker.update('a\n\nb\n\nc and more').stable).toBe(2);
    tracker.update('- x\n\ny');
    expect(tracker.update('- x\n\ny z').stable).toBe(1); // rescanned from the list, which compares equal
  });

  it('rescans everything when earlier text changed, keeping what still matches', () => {
    const tracker = new BlockTracker();
    tracker.update('a\n\nb\n\nc\n\nd');
    const { blocks, stable } = tracker.update('a\n\nB\n\nc\n\nd');
    expect(stable).toBe(1);
    expect(blocks.length).toBe(4);
  });

  it('follows a list item that turns out to continue the list', () => {
    const tracker = new BlockTracker();
    tracker.update('- a\n\n1');
    const { blocks } = tracker.update('- a\n\n1. b');
    expect(blocks.length).toBe(1);
  });
});

describe('helpers', () => {
  it('openFenceBody drops the opening line', () => {
    expect(openFenceBody('```py\nx = 1\ny')).toBe('x = 1\ny');
    expect(openFenceBody('```py')).toBe('');
  });

  it('mayRerender keeps re-rendering to a fifth of the time', () => {
    expect(mayRerender(100, 0, 10)).toBe(true);
    expect(mayRerender(40, 0, 10)).toBe(false);
    expect(mayRerender(50, 0, 10)).toBe(true);
  });
});
