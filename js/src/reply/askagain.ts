/**
 * A stale reply's Ask again (`stale.ts` draws the button): the kernel hears that the prompt cell's next run asks the
 * model (`fresh` on the channel), then the notebook runs the cell with its own run.
 */

import { Cell } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { freshReply } from '../channel/stop';

/**
 * Ask again: the kernel hears that the next run of `cell` asks the model, then the notebook runs it. False (nothing
 * run) where the kernel cannot hear it: the mark says how to ask instead (`%%prompt --fresh`).
 */
export async function askAgain(panel: NotebookPanel, cell: Cell, cellId: string): Promise<boolean> {
  if (!freshReply(panel, cellId)) {
    return false;
  }
  const nb = panel.content;
  if (typeof NotebookActions.runCells === 'function') {
    await NotebookActions.runCells(nb, [cell], panel.sessionContext);
  } else {
    nb.activeCellIndex = nb.widgets.indexOf(cell);
    await NotebookActions.run(nb, panel.sessionContext);
  }
  return true;
}
