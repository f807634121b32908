/**
 * What stands in for the kernel's ipywidgets when this extension is there (`WIDGET_MIME`, plain DOM:
 * unit-tested in jsdom). The kernel shows widgets where no extension is present; here the toolbar has
 * the brain menu and the reply view has the code actions, so:
 *
 *   menu          one compact line pointing at the toolbar menu, with a button that opens it
 *   code_actions  nothing visible (the reply view above already offers Run and Copy)
 *   anything else the bundle's text/plain, as text
 *
 * So a notebook reopened without its kernel never shows "Error displaying widget".
 */

import { parseWidgetPlaceholder } from '../protocol/parse';

export const PLACEHOLDER_CLASS = 'boop-WidgetPlaceholder';
export const MENU_HINT = 'The brain menu is in the notebook toolbar';

/** Draw the placeholder for `data` (the `WIDGET_MIME` value) into `host`, replacing what was there. */
export function drawPlaceholder(
  host: HTMLElement,
  data: unknown,
  plainText: string,
  options: { icon?: () => HTMLElement; openMenu?: () => void } = {}
): void {
  const w = parseWidgetPlaceholder(data);
  const kind = w?.kind ?? '';
  host.dataset.boopWidget = kind || 'unknown';
  host.classList.toggle('boop-mod-empty', kind === 'code_actions');
  if (kind === 'code_actions') {
    host.replaceChildren();
    return;
  }
  if (kind !== 'menu') {
    const text = document.createElement('span');
    text.className = 'boop-WidgetPlaceholder-text';
    text.textContent = plainText;
    host.replaceChildren(text);
    return;
  }
  const parts: HTMLElement[] = [];
  if (options.icon) {
    const icon = options.icon();
    icon.classList.add('boop-WidgetPlaceholder-icon');
    icon.setAttribute('aria-hidden', 'true');
    parts.push(icon);
  }
  const text = document.createElement('span');
  text.className = 'boop-WidgetPlaceholder-text';
  text.textContent = MENU_HINT;
  parts.push(text);
  if (options.openMenu) {
    const open = options.openMenu;
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'boop-WidgetPlaceholder-open';
    b.textContent = 'Open it';
    b.setAttribute('aria-label', 'Open the brain menu');
    b.addEventListener('click', () => open());
    parts.push(b);
  }
  host.replaceChildren(...parts);
}
