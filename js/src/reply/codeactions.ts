/**
 * The actions on each code block of a reply: Insert below and Insert and run (as the cell that runs it: Python, or a
 * shell script under `%%bash`; `language.ts`), and Copy. A block in a language the kernel cannot run gets Copy only.
 * Blocks the tool loop ran already lose "Insert and run". Plain DOM (unit-tested in jsdom through `ReplyView`): the
 * buttons carry `data-boop-action`, and the view's click handler runs them (`codeOf`, `cellOf`, `flash`).
 */

import { el } from '../dom';
import { cellSource } from './language';

function codeLanguage(pre: HTMLElement): string {
  const code = pre.querySelector('code');
  const cls = (code?.className ?? '') + ' ' + pre.className;
  const m = /(?:^|\s)language-([\w+#.-]+)/.exec(cls);
  return m ? m[1].toLowerCase() : (pre.dataset.language ?? code?.dataset.language ?? '').toLowerCase();
}

export type IconName = 'insert' | 'run' | 'copy' | 'stop' | 'replace';
/** Text marks for the icons when no icon set is given (the unit tests). */
const GLYPHS: { [K in IconName]: string } = { insert: '⤓', run: '▶', copy: '⧉', stop: '■', replace: '✎' };
export type IconFactory = (name: IconName) => HTMLElement;
export const textIcon: IconFactory = name => el('span', '', GLYPHS[name]);

/**
 * Each code block gets its actions: Insert below and Insert and run (blocks the kernel can run), Copy; and in a fix
 * (`fixes`), python blocks first offer Fix the cell (the cell the fix is for, once its diff is accepted).
 */
export function addCodeActions(host: HTMLElement, inNotebook: boolean, icon: IconFactory = textIcon, fixes = false): void {
  for (const pre of Array.from(host.querySelectorAll('pre'))) {
    if (pre.parentElement?.classList.contains('boop-Code')) {
      continue;
    }
    const wrap = el('div', 'boop-Code');
    const language = codeLanguage(pre);
    wrap.dataset.language = language;
    pre.replaceWith(wrap);
    const bar = el('div', 'boop-CodeActions');
    bar.setAttribute('role', 'toolbar');
    bar.setAttribute('aria-label', 'Code actions');
    const button = (action: IconName, label: string, title: string) => {
      const b = el('button', 'boop-CodeAction');
      b.type = 'button';
      b.dataset.boopAction = action;
      b.title = title;
      const mark = icon(action);
      mark.classList.add('boop-CodeAction-icon');
      mark.setAttribute('aria-hidden', 'true');
      b.append(mark, el('span', 'boop-CodeAction-label', label));
      return b;
    };
    const cell = cellSource(language, '');
    if (inNotebook && fixes && cell !== null && !cell) {
      bar.append(button('replace', 'Fix the cell', 'Put this code in the cell that failed, after you review the change, and run it'));
    }
    if (inNotebook && cell !== null) {
      const as = cell ? ` as a ${cell.trim()} cell` : ' as a new code cell';
      bar.append(button('insert', 'Insert', `Insert below the prompt${as}`));
      bar.append(button('run', 'Insert and run', `Insert below the prompt${as} and run it`));
    }
    bar.append(button('copy', 'Copy', 'Copy the code'));
    wrap.append(pre, bar);
  }
}

/**
 * Blocks the tool loop ran already (their text, trimmed, in `ran`) lose "Insert and run": a click would run the
 * calls a second time. Insert and Copy stay.
 */
export function markRanBlocks(host: HTMLElement, ran: ReadonlySet<string>): void {
  if (!ran.size) {
    return;
  }
  for (const wrap of Array.from(host.querySelectorAll('.boop-Code'))) {
    if (ran.has(codeOf(wrap).trim())) {
      wrap.classList.add('boop-mod-ran');
      wrap.querySelector('[data-boop-action="run"]')?.remove();
    }
  }
}

/** The code in a block's `.boop-Code` wrapper, without its final newline. */
export function codeOf(wrap: Element): string {
  const pre = wrap.querySelector('pre');
  const text = pre?.textContent ?? '';
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

/** The source of the cell that runs the block in a `.boop-Code` wrapper (`language.ts`); null: it is for copying. */
export function cellOf(wrap: HTMLElement): string | null {
  return cellSource(wrap.dataset.language ?? '', codeOf(wrap));
}

/** Show a short confirmation on a button, then restore it. */
export function flash(button: HTMLButtonElement, text: string): void {
  const label = button.querySelector('.boop-CodeAction-label');
  if (!label) {
    return;
  }
  const old = button.dataset.label ?? label.textContent ?? '';
  button.dataset.label = old;
  label.textContent = text;
  window.setTimeout(() => {
    label.textContent = old;
  }, 1500);
}
