/**
 * What the model changed in a notebook, by the prompt cell whose reply changed it, so that all of it is undone as one
 * step: cells it added, edits and deletions the user accepted. A change the user has built on since (an added cell
 * they edited, an edited cell they typed in) is left as it is and counted. Kept for the page's life, not saved.
 */

import { diffRange, IEditableNotebook } from './edits';

export type IChange =
  | { op: 'add'; cellId: string; source: string }
  | { op: 'edit'; cellId: string; before: string; after: string }
  | { op: 'delete'; index: number; afterId: string | null; cell: { cell_type: 'code' | 'markdown'; source: string; metadata: { [k: string]: unknown } } };

export class Journal {
  /** Note `change`, made for the prompt cell `prompt`. */
  record(prompt: string, change: IChange): number {
    const list = this._changes.get(prompt) ?? [];
    list.push(change);
    this._changes.set(prompt, list);
    return list.length;
  }

  /** Undo `prompt`'s changes, the last first, in one transaction (one step of the notebook's undo); one line says how it went. */
  undo(nb: IEditableNotebook, prompt: string): string {
    const list = this._changes.get(prompt) ?? [];
    this._changes.delete(prompt);
    let undone = 0;
    let kept = 0;
    const at = (id: string) => nb.cells.findIndex(c => c.id === id);
    nb.undoManager?.stopCapturing();
    nb.transact(() => {
      for (const change of list.reverse()) {
        if (change.op === 'add') {
          const i = at(change.cellId);
          if (i >= 0 && nb.cells[i].getSource() === change.source) {
            nb.deleteCell(i);
            undone++;
          } else {
            kept += Number(i >= 0);
          }
        } else if (change.op === 'edit') {
          const i = at(change.cellId);
          if (i >= 0 && nb.cells[i].getSource() === change.after) {
            const { start, end, text } = diffRange(change.after, change.before);
            nb.cells[i].updateSource(start, end, text);
            undone++;
          } else {
            kept += Number(i >= 0);
          }
        } else {
          const after = change.afterId === null ? -1 : at(change.afterId);
          const index = after >= 0 ? after + 1 : Math.min(change.index, nb.cells.length);
          nb.insertCell(index, change.cell);
          undone++;
        }
      }
    }, true);
    nb.undoManager?.stopCapturing();
    const what = `Undone: ${undone} change${undone === 1 ? '' : 's'}`;
    return kept ? `${what}; ${kept} cell${kept === 1 ? '' : 's'} you changed since kept as you left ${kept === 1 ? 'it' : 'them'}.` : `${what}.`;
  }

  private _changes = new Map<string, IChange[]>();
}
