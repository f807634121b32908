// @vitest-environment jsdom
import { describe, expect, it, vi } from 'vitest';
import { drawPlaceholder, MENU_HINT } from '../../src/reply/placeholder';

const TEXT = 'boopiter brain menu (a live widget: it needs a running kernel)';

describe('drawPlaceholder', () => {
  it('points at the toolbar menu, with a button that opens it', () => {
    const host = document.createElement('div');
    const openMenu = vi.fn();
    drawPlaceholder(host, { version: 1, kind: 'menu' }, TEXT, { openMenu, icon: () => document.createElement('i') });
    expect(host.dataset.boopWidget).toBe('menu');
    expect(host.textContent).toBe(`${MENU_HINT}Open it`);
    expect(host.querySelector('i')!.getAttribute('aria-hidden')).toBe('true');
    const button = host.querySelector('button')!;
    expect(button.getAttribute('aria-label')).toBe('Open the brain menu');
    button.click();
    expect(openMenu).toHaveBeenCalledOnce();
  });

  it('draws nothing for the code actions (the reply view has them)', () => {
    const host = document.createElement('div');
    host.textContent = 'before';
    drawPlaceholder(host, { version: 1, kind: 'code_actions' }, 'boopiter Run and Copy-to-cell buttons');
    expect(host.textContent).toBe('');
    expect(host.classList.contains('boop-mod-empty')).toBe(true);
  });

  it('shows the readable text for a widget it does not know, or unreadable data, as text', () => {
    const host = document.createElement('div');
    drawPlaceholder(host, { version: 2, kind: 'future' }, '<b>text</b>');
    expect(host.textContent).toBe('<b>text</b>');
    expect(host.querySelector('b')).toBeNull();
    drawPlaceholder(host, 'junk', TEXT);
    expect([host.dataset.boopWidget, host.textContent]).toEqual(['unknown', TEXT]);
    expect(host.classList.contains('boop-mod-empty')).toBe(false);
  });
});
