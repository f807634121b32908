/**
 * What a reply's code actions do in the notebook: find the prompt cell that shows the reply, and insert a block of
 * code below it as a new code cell (after earlier inserts from the same reply), run by the notebook's own run if asked.
 */

import { Cell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { MODEL_TAG } from '../cells/tags';

export interface ICellTarget {
  panel: NotebookPanel;
  cell: Cell;
}

/** The notebook cell whose output holds `node`: by DOM ancestry, else by the cell id the reply carries. */
export function findCell(tracker: INotebookTracker, node: HTMLElement, cellId?: string): ICellTarget | null {
  const cellNode = node.closest('.jp-Cell');
  let found: ICellTarget | null = null;
  tracker.forEach(panel => {
    if (found || !panel.content.node.contains(node)) {
      return;
    }
    const cell = panel.content.widgets.find(c => c.node === cellNode);
    if (cell) {
      found = { panel, cell };
    }
  });
  if (!found && cellId) {
    // shown outside its cell (a separate output view): the prompt cell the kernel named, in the current notebook
    // first (a copy of a notebook has the same cell ids)
    const panels: NotebookPanel[] = [];
    tracker.forEach(panel => {
      panels.push(panel);
    });
    const current = tracker.currentWidget;
    panels.sort((a, b) => Number(b === current) - Number(a === current));
    for (const panel of panels) {
      const cell = panel.content.widgets.find(c => c.model.id === cellId);
      if (cell) {
        return { panel, cell };
      }
    }
  }
  return found;
}

/** The last cell inserted from each prompt cell's reply, so several inserts keep their order. */
const lastInserted = new WeakMap<object, string>();

/**
 * Insert `code` as a new code cell below the prompt cell (after earlier inserts from it); run it if asked, once `after`
 * resolves when given (the reply streams on), unless the inserted cell is gone by then.
 */
export async function insertBelow(target: ICellTarget, code: string, run: boolean, after?: Promise<void>): Promise<void> {
  const { panel, cell } = target;
  const nb = panel.content;
  const model = nb.model;
  if (!model) {
    throw new Error('no notebook model');
  }
  let index = nb.widgets.indexOf(cell) + 1;
  if (index === 0) {
    throw new Error('the prompt cell is gone');
  }
  const previous = lastInserted.get(cell.model);
  if (previous) {
    const j = nb.widgets.findIndex(c => c.model.id === previous);
    if (j >= index) {
      index = j + 1;
    }
  }
  // the model's code, marked so (`MODEL_TAG`): in the notebook, and in what the model reads of it later
  model.sharedModel.insertCell(index, { cell_type: 'code', source: code, metadata: { trusted: true, tags: [MODEL_TAG] } });
  const inserted = nb.widgets[index];
  lastInserted.set(cell.model, inserted.model.id);
  nb.deselectAll();
  nb.activeCellIndex = index;
  if (run && after) {
    await after;
    if (inserted.isDisposed || nb.isDisposed) {
      return;
    }
  }
  if (run) {
    await runCell(panel, inserted);
  }
}

/** Run `cell` with the notebook's own run: it gets its execution count, and the notebook records what ran. */
export async function runCell(panel: NotebookPanel, cell: Cell): Promise<void> {
  const nb = panel.content;
  if (typeof NotebookActions.runCells === 'function') {
    await NotebookActions.runCells(nb, [cell], panel.sessionContext);
    return;
  }
  nb.deselectAll();
  nb.activeCellIndex = nb.widgets.indexOf(cell);
  await NotebookActions.run(nb, panel.sessionContext);
}
