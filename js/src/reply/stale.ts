/**
 * A saved reply kept although its context changed (`stale`), and the reply a fresh answer replaced (`previous`).
 *
 * The mark sits above the reply: what changed since it was made (the kernel's line: text and `code` spans) and one
 * action, Ask again, which tells the kernel that the prompt cell's next run asks the model (`fresh`), then runs the
 * cell with the notebook's own run (`askagain.ts`). The replaced reply sits below the details, folded, as plain text: nothing is lost
 * by asking. Model text only enters as `textContent`. Plain DOM, so it is unit-tested in jsdom.
 */

import { el, setText } from '../dom';
import { appendInline } from '../menu/inline';
import { ReplyData } from '../protocol/bundles';

const MARK = 'boop-Reply-stale';
const PREVIOUS = 'boop-Reply-previous';

/** The mark's element in `node` (made at its top on first use), or null when `make` is false and there is none. */
function part(node: HTMLElement, cls: string, make: () => HTMLElement, first: boolean): HTMLElement {
  let e = Array.from(node.children).find(c => c.classList.contains(cls)) as HTMLElement | undefined;
  if (!e) {
    e = make();
    if (first) {
      node.prepend(e);
    } else {
      node.append(e);
    }
  }
  return e;
}

function makeMark(): HTMLElement {
  const mark = el('div', MARK);
  mark.setAttribute('role', 'note');
  const button = el('button', 'boop-Reply-askAgain jp-mod-styled');
  button.type = 'button';
  button.dataset.boopAction = 'fresh';
  button.title = 'Ask the model again with the context as it is now; this reply stays, folded, as the previous answer';
  button.append(el('span', 'boop-CodeAction-label', 'Ask again'));
  mark.append(el('span', 'boop-Reply-staleText'), button);
  return mark;
}

function makePrevious(): HTMLElement {
  const details = el('details', PREVIOUS);
  details.append(el('summary', '', 'Previous answer'), el('pre', 'boop-Reply-previousText'));
  return details;
}

/** Show (or hide) the stale mark and the previous answer of reply `r` in the reply view's `node`. */
export function drawStale(node: HTMLElement, r: ReplyData): void {
  const has = (cls: string) => Array.from(node.children).some(c => c.classList.contains(cls));
  if (r.stale || has(MARK)) {
    const mark = part(node, MARK, makeMark, true);
    mark.hidden = !r.stale;
    const text = mark.querySelector('.boop-Reply-staleText') as HTMLElement;
    if (text.dataset.text !== (r.stale ?? '')) {
      text.dataset.text = r.stale ?? '';
      text.replaceChildren();
      appendInline(text, r.stale ?? ''); // its `code` spans as code, never HTML
    }
  }
  if (r.previous || has(PREVIOUS)) {
    const prev = part(node, PREVIOUS, makePrevious, false);
    prev.hidden = !r.previous;
    const by = r.previous?.model ? ` · ${r.previous.model}` : '';
    setText(prev.querySelector('summary') as HTMLElement, `Previous answer${by}`);
    setText(prev.querySelector('pre') as HTMLElement, r.previous?.answer ?? '');
  }
}
