/** The controls the brain menu is built of: buttons, on/off toggles, selects; `data-key` keeps the focus across rebuilds. */

import { el } from '../dom';

/** `e`, hidden from assistive technology (a mark that the control's name says already). */
export function hidden(e: HTMLElement): HTMLElement {
  e.setAttribute('aria-hidden', 'true');
  return e;
}

/** A button that does something (`data-action`: load, refresh). */
export function actionButton(key: string, text: string, title: string, extra = ''): HTMLElement {
  const b = el('button', `boop-Menu-button jp-mod-styled ${extra}`.trim(), text);
  b.type = 'button';
  b.title = title;
  b.dataset.key = key;
  b.dataset.action = key;
  return b;
}

/** An on/off button (`aria-pressed`, with a check mark); `data-toggle` is the setting it flips. */
export function toggleButton(key: string, text: string, on: boolean, title: string): HTMLElement {
  const b = el('button', 'boop-Menu-toggle');
  b.type = 'button';
  b.setAttribute('aria-pressed', String(on));
  b.title = title;
  b.dataset.key = key;
  b.dataset.toggle = key;
  b.append(hidden(el('span', 'boop-Menu-mark', on ? '✓' : '')), el('span', '', text));
  return b;
}

/** A labelled select; `data-pick` is the setting it picks. */
export function selectControl(key: string, label: string, options: [string, string][], value: string, title = ''): HTMLElement {
  const wrap = el('label', 'boop-Menu-select');
  if (title) {
    wrap.title = title;
  }
  const select = el('select');
  select.setAttribute('aria-label', title ? `${label}: ${title}` : label);
  select.dataset.key = key;
  select.dataset.pick = key;
  for (const [text, v] of options) {
    const o = el('option', '', text);
    o.value = v;
    o.selected = v === value;
    select.append(o);
  }
  wrap.append(el('span', 'boop-Menu-inlineLabel', label), select);
  return wrap;
}
