/**
 * A change the model proposes to a cell, shown in the cell for the user to accept or reject: a line diff (`diff.ts`),
 * text only, and two buttons. And the bar on a prompt cell that undoes, as one step, what its reply changed.
 * Plain DOM, unit-tested in jsdom: the model's text only ever enters as `textContent`.
 */

import { el } from '../dom';
import { folded, lineDiff } from './diff';

export interface IReviewOptions {
  /** What is proposed, in one line ("The model proposes this change"). */
  title: string;
  before: string;
  after: string;
  /** The accept button's label. */
  accept?: string;
}

export interface IReview {
  readonly node: HTMLElement;
  /** True once accepted, false once rejected or withdrawn; the node is gone by then. */
  readonly decided: Promise<boolean>;
  /** Withdraw the review (the kernel stopped waiting, the cell is gone): `decided` resolves false. */
  withdraw(): void;
}

/** The diff's lines as text rows, unchanged runs folded. */
export function diffNode(before: string, after: string): HTMLElement {
  const pre = el('pre', 'boop-Review-diff');
  for (const line of folded(lineDiff(before, after))) {
    if (line.kind === 'fold') {
      pre.append(el('div', 'boop-Review-line boop-mod-fold', `⋯ ${line.count} unchanged line${line.count === 1 ? '' : 's'}`));
      continue;
    }
    const mark = line.kind === 'add' ? '+ ' : line.kind === 'del' ? '- ' : '  ';
    const row = el('div', `boop-Review-line boop-mod-${line.kind}`, mark + line.text);
    pre.append(row);
  }
  return pre;
}

/** The user's decision about `node`: `settle` resolves it (the first call counts) and takes `node` out of the page. */
function decision<T>(node: HTMLElement): { decided: Promise<T>; settle: (value: T) => void } {
  let resolve: (value: T) => void = () => undefined;
  const decided = new Promise<T>(r => (resolve = r));
  return {
    decided,
    settle: value => {
      node.remove();
      resolve(value);
    }
  };
}

/** A review of `options`: its node (put it in the cell), and the user's decision. */
export function review(options: IReviewOptions): IReview {
  const node = el('div', 'boop-Review');
  node.setAttribute('role', 'group');
  node.setAttribute('aria-label', options.title);
  const buttons = el('div', 'boop-Review-buttons');
  const accept = el('button', 'boop-Review-accept jp-mod-styled jp-mod-accept', options.accept ?? 'Accept');
  const reject = el('button', 'boop-Review-reject jp-mod-styled jp-mod-reject', 'Reject');
  accept.type = reject.type = 'button';
  buttons.append(accept, reject);
  node.append(el('div', 'boop-Review-title', options.title), diffNode(options.before, options.after), buttons);
  const { decided, settle } = decision<boolean>(node);
  accept.addEventListener('click', () => settle(true));
  reject.addEventListener('click', () => settle(false));
  return { node, decided, withdraw: () => settle(false) };
}

/** What the user chose for a cell of the model's (agent mode). */
export type StepChoice = 'run' | 'skip' | 'stop' | 'rest';

export interface IStepConsent {
  readonly node: HTMLElement;
  /** The choice; 'stop' when withdrawn. The node is gone by then. */
  readonly decided: Promise<StepChoice>;
  withdraw(): void;
}

/**
 * The question under the prompt cell about a block the model wants to run (agent mode): its code, as text, and Run,
 * Skip, Stop, and Run the rest of this reply, which is not offered for code that may reach outside the kernel
 * (`reason` says how; it is asked for every time). The cell is made only once the user says Run.
 */
export function stepConsent(code: string, reason: string): IStepConsent {
  const node = el('div', 'boop-Review boop-mod-step');
  node.setAttribute('role', 'group');
  const title = reason
    ? `The model wants to run this as a cell below (asked every time: ${reason})`
    : 'The model wants to run this as a cell below';
  node.setAttribute('aria-label', title);
  const buttons = el('div', 'boop-Review-buttons');
  const choices: [StepChoice, string, string][] = [
    ['run', 'Run', 'boop-Review-accept jp-mod-styled jp-mod-accept'],
    ['skip', 'Skip', 'jp-mod-styled'],
    ['stop', 'Stop', 'jp-mod-styled jp-mod-reject'],
    ...(reason ? [] : [['rest', 'Run the rest of this reply', 'jp-mod-styled'] as [StepChoice, string, string]])
  ];
  const { decided, settle } = decision<StepChoice>(node);
  for (const [choice, label, cls] of choices) {
    const b = el('button', cls, label);
    b.type = 'button';
    b.dataset.boopStep = choice;
    b.addEventListener('click', () => settle(choice));
    buttons.append(b);
  }
  node.append(el('div', 'boop-Review-title', title), el('pre', 'boop-Review-diff boop-Review-code', code), buttons);
  return { node, decided, withdraw: () => settle('stop') };
}

/** The bar on a prompt cell: how many changes its reply made, and Undo (all of them, one step). */
export function changesBar(count: number, undo: () => string): HTMLElement {
  const bar = el('div', 'boop-Changes');
  bar.setAttribute('role', 'status');
  const text = el('span', 'boop-Changes-text', `The model changed the notebook ${count} time${count === 1 ? '' : 's'} for this prompt.`);
  const button = el('button', 'boop-Changes-undo jp-mod-styled', 'Undo all');
  button.type = 'button';
  button.title = 'Undo every change this reply made, as one step';
  button.addEventListener('click', () => {
    text.textContent = undo();
    button.remove();
  });
  bar.append(text, button);
  return bar;
}
