import { describe, expect, it } from 'vitest';
import { isPromptSource, PROMPT_TEMPLATE, touchesPrefix } from '../../src/cells/prompt';

describe('isPromptSource', () => {
  it('is a %%prompt cell magic as a whole word at the very start', () => {
    expect(isPromptSource('%%prompt')).toBe(true);
    expect(isPromptSource('%%prompt\nWhy?')).toBe(true);
    expect(isPromptSource('%%prompt -m qwen3\nWhy?')).toBe(true);
    expect(isPromptSource(PROMPT_TEMPLATE)).toBe(true);
    expect(isPromptSource('%%prompter\n')).toBe(false);
    expect(isPromptSource(' %%prompt\n')).toBe(false);
    expect(isPromptSource('# %%prompt\n')).toBe(false);
    expect(isPromptSource('%%promp')).toBe(false);
    expect(isPromptSource('')).toBe(false);
  });
});

describe('touchesPrefix', () => {
  it('is false only for edits that keep the first characters', () => {
    expect(touchesPrefix([{ retain: 20 }, { insert: 'x' } as any])).toBe(false);
    expect(touchesPrefix([{ retain: 3 }, { insert: 'x' } as any])).toBe(true);
    expect(touchesPrefix([{ insert: 'x' } as any])).toBe(true);
    expect(touchesPrefix(undefined)).toBe(true);
  });
});
