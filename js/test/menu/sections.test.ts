// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { loadCellSection, reasoningSection, repliesSection } from '../../src/menu/sections';
import { parseMenuState } from '../../src/protocol/parse';

const MENU = parseMenuState({
  answering: { model: 'qwen3:8b', why: 'notebook binding' },
  settings: { model: 'qwen3:8b', reasoning_model: 'qwen3:8b', reuse: true },
  models: [{ id: 'qwen3:8b', label: 'qwen3:8b', source: 'ollama', capabilities: ['thinking'] }]
})!;
const chips = (section: HTMLElement) =>
  Array.from(section.querySelectorAll('[data-think]'), b => [(b as HTMLButtonElement).disabled, (b as HTMLElement).title]);

describe('the reasoning effort', () => {
  it('can be picked only while reasoning is on, and says why not', () => {
    const off = reasoningSection('p', MENU, { ...MENU.settings, reasoning: false });
    expect(chips(off).every(([disabled, title]) => disabled && String(title).includes('while reasoning is on'))).toBe(true);
    expect(off.querySelector('[role="radiogroup"]')!.getAttribute('aria-disabled')).toBe('true');
    const on = reasoningSection('p', MENU, { ...MENU.settings, reasoning: true });
    expect(chips(on).map(([disabled]) => disabled)).toEqual([false, false, false, false]);
    expect(on.querySelector('[role="radiogroup"]')!.hasAttribute('aria-disabled')).toBe(false);
    const none = reasoningSection('p', { ...MENU, models: [] }, { ...MENU.settings, reasoning_model: '', reasoning: false });
    expect(chips(none).every(([disabled, title]) => disabled && String(title).startsWith('No reasoning model'))).toBe(true);
  });
});

describe('the other lines', () => {
  it('reuse is a toggle like the others, in a section of its own', () => {
    const s = repliesSection('p', MENU.settings);
    const t = s.querySelector('[data-toggle="reuse"]')!;
    expect([t.className, t.getAttribute('aria-pressed')]).toEqual(['boop-Menu-toggle', 'true']);
  });

  it('the load cell line shows only where it is needed, its code as code', () => {
    expect(loadCellSection(false)).toBeNull();
    const line = loadCellSection(true)!;
    expect(line.querySelector('code')!.textContent).toBe('%load_ext boopiter_ext');
    expect(line.querySelector('[data-action="add-load-cell"]')!.textContent).toBe('Add the load cell');
  });
});
