/**
 * The notebook changes the model's tools ask for (`{type: 'edit'}` from the kernel, confirmed there by the
 * user already), carried out on the shared notebook in one undoable step, and the one line the model reads
 * back. Typed structurally so the units run on a stub; `INotebookModel.sharedModel` fits.
 *
 *   add    a code or Markdown cell below the cell `after`
 *   edit   the whole text of `cell`, refused unless the cell still holds exactly `expect` (what the model
 *          read): the user may have typed in it since
 *   delete `cell`, refused likewise unless it still holds `expect`
 *
 * An edit or a deletion is first reviewed by the user (`checkEdit`, then `cells/review.ts`); it is carried out only
 * once accepted, and checked again then.
 */

import { isPromptSource } from '../cells/prompt';
import { MODEL_TAG } from '../cells/tags';
import { IEditMessage, IReviewedEdit } from '../protocol/messages';

export interface IEditableCell {
  readonly id: string;
  readonly cell_type: string;
  readonly metadata?: { [k: string]: unknown };
  getSource(): string;
  updateSource(start: number, end: number, value?: string): void;
  /** The cell's own transaction: one step of its undo (Ctrl+Z in its editor), where the notebook's undo is per cell. */
  transact?(f: () => void, undoable?: boolean): void;
  readonly undoManager?: { stopCapturing(): void } | null;
}

export interface IEditableNotebook {
  readonly cells: readonly IEditableCell[];
  insertCell(index: number, cell: { cell_type: 'code' | 'markdown'; source: string; metadata?: { [k: string]: unknown } }): IEditableCell;
  deleteCell(index: number): void;
  /** One transaction: one step of the notebook's undo. */
  transact(f: () => void, undoable?: boolean): void;
  readonly undoManager?: { stopCapturing(): void } | null;
}

export interface IEditOutcome {
  ok: boolean;
  /** One line for the model. */
  message: string;
  /** The cell added or changed. */
  cellId?: string;
}

/** The most a cell's new text may hold (the kernel's tools allow 100,000 characters). */
export const MAX_EDIT_SOURCE = 1_000_000;
const UNDO_NOTE = '(Undo in the notebook reverts it)';

/** An id as it may appear in a one-line message: printable, at most 80 characters. */
function shownId(id: string): string {
  const clean = id.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '?');
  return clean.length > 80 ? `${clean.slice(0, 79)}…` : clean;
}

function refused(message: string): IEditOutcome {
  return { ok: false, message: `refused: ${message}` };
}

/** Where two texts differ: the common prefix and suffix lengths, so only the middle is replaced. */
export function diffRange(before: string, after: string): { start: number; end: number; text: string } {
  const max = Math.min(before.length, after.length);
  let start = 0;
  while (start < max && before.charCodeAt(start) === after.charCodeAt(start)) {
    start++;
  }
  let tail = 0;
  while (tail < max - start && before.charCodeAt(before.length - 1 - tail) === after.charCodeAt(after.length - 1 - tail)) {
    tail++;
  }
  // never split a surrogate pair
  if (start > 0 && isHigh(before.charCodeAt(start - 1))) {
    start--;
  }
  if (tail > 0 && isLow(before.charCodeAt(before.length - tail))) {
    tail--;
  }
  return { start, end: before.length - tail, text: after.slice(start, after.length - tail) };
}
const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

function find(nb: IEditableNotebook, id: string): number {
  return nb.cells.findIndex(c => c.id === id && (c.cell_type === 'code' || c.cell_type === 'markdown'));
}

function noCell(id: string): IEditOutcome {
  return refused(`no code or Markdown cell ${shownId(id)} in the notebook (it was deleted, or the id is wrong); list the cells again`);
}

/** One step of the notebook's undo: captured alone, not merged with an edit just before or after. */
function oneStep(nb: Pick<IEditableNotebook, 'transact' | 'undoManager'>, f: () => void): void {
  nb.undoManager?.stopCapturing();
  nb.transact(f, true);
  nb.undoManager?.stopCapturing();
}

/**
 * Why an edit or a deletion cannot be made now (the cell is gone, or changed since the model read it), or null: then
 * it can be reviewed. The cell's index comes with null.
 */
export function checkEdit(nb: IEditableNotebook, req: IReviewedEdit, readOnly = false): { refusal: IEditOutcome | null; index: number } {
  if (readOnly) {
    return { refusal: refused('the notebook is read-only here'), index: -1 };
  }
  if (req.op === 'edit' && req.source.length > MAX_EDIT_SOURCE) {
    return { refusal: refused(`the new text is longer than ${MAX_EDIT_SOURCE.toLocaleString('en-US')} characters`), index: -1 };
  }
  const at = find(nb, req.cell);
  if (at < 0) {
    return { refusal: noCell(req.cell), index: -1 };
  }
  if (nb.cells[at].getSource() !== req.expect) {
    const since = `cell ${shownId(req.cell)} changed since the model read it (the user edited it); read it again before`;
    return { refusal: refused(`${since} ${req.op === 'edit' ? 'editing' : 'deleting'} it`), index: at };
  }
  return { refusal: null, index: at };
}

/** Carry out `req` on `nb` (or refuse it); never throws for a bad request. */
export function applyEdit(nb: IEditableNotebook, req: IEditMessage, readOnly = false): IEditOutcome {
  if (req.op === 'invalid') {
    return refused(req.problem);
  }
  if (readOnly) {
    return refused('the notebook is read-only here');
  }
  if (req.op === 'run') {
    return refused("a cell to run is agent mode's step (the channel's), not an edit");
  }
  if (req.op === 'add') {
    if (req.source.length > MAX_EDIT_SOURCE) {
      return refused(`the new text is longer than ${MAX_EDIT_SOURCE.toLocaleString('en-US')} characters`);
    }
    const at = find(nb, req.after);
    if (at < 0) {
      return noCell(req.after);
    }
    let added: IEditableCell | null = null;
    const metadata = req.cell_type === 'code' ? { trusted: true, tags: [MODEL_TAG] } : { tags: [MODEL_TAG] };
    oneStep(nb, () => {
      added = nb.insertCell(at + 1, { cell_type: req.cell_type, source: req.source, metadata });
    });
    const id = (added as IEditableCell | null)?.id ?? nb.cells[at + 1]?.id ?? '';
    const kind = req.cell_type === 'markdown' ? 'Markdown' : isPromptSource(req.source) ? 'prompt' : 'code';
    return { ok: true, cellId: id, message: `done: added a ${kind} cell ${shownId(id)} below ${shownId(req.after)} ${UNDO_NOTE}` };
  }
  const { refusal, index } = checkEdit(nb, req);
  if (refusal) {
    return refusal;
  }
  const cell = nb.cells[index];
  if (req.op === 'delete') {
    oneStep(nb, () => nb.deleteCell(index));
    return { ok: true, cellId: cell.id, message: `done: deleted cell ${shownId(cell.id)} ${UNDO_NOTE}` };
  }
  const now = cell.getSource();
  if (now === req.source) {
    return { ok: true, cellId: cell.id, message: `done: cell ${shownId(cell.id)} already holds that text; nothing changed` };
  }
  const { start, end, text } = diffRange(now, req.source);
  // in the cell's own transaction where it has one: one step of its undo, Ctrl+Z in its editor
  oneStep(cell.transact ? (cell as Pick<IEditableNotebook, 'transact' | 'undoManager'>) : nb, () => cell.updateSource(start, end, text));
  return { ok: true, cellId: cell.id, message: `done: replaced the text of cell ${shownId(cell.id)} ${UNDO_NOTE}` };
}
