import { describe, expect, it } from 'vitest';
import { mayRerender, openFenceBody } from '../../src/reply/blocks';

describe('helpers', () => {
  it('openFenceBody shows the code of a growing fence without its opening line or the closing fence the kernel adds', () => {
    expect(openFenceBody('```py\nx = 1\ny\n```')).toBe('x = 1\ny');
    expect(openFenceBody('````\nx\n```\n````')).toBe('x\n```'); // a shorter run inside is code
    expect(openFenceBody('~~~\nx\n~~~~')).toBe('x');
    expect(openFenceBody('```py\nx = 1\ny')).toBe('x = 1\ny'); // not closed at all (older or hand-written data)
    expect(openFenceBody('```\n```')).toBe('');
    expect(openFenceBody('```py')).toBe('');
  });

  it('mayRerender keeps re-rendering to a fifth of the time', () => {
    expect(mayRerender(100, 0, 10)).toBe(true);
    expect(mayRerender(40, 0, 10)).toBe(false);
    expect(mayRerender(50, 0, 10)).toBe(true);
  });
});
