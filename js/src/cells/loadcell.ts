/** Putting the notebook's load cell in, and running it (what it is and where it goes: `loadplan.ts`). */

import { CodeCell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { KernelMessage } from '@jupyterlab/services';
import { IPlanCell, LOAD_CELL, loadPlan } from './loadplan';

export { needsLoadCell } from './loadplan';

/** The cells of `panel` as `loadPlan` reads them. */
export function planCells(panel: NotebookPanel): IPlanCell[] {
  const cells = panel.content.model?.sharedModel.cells ?? [];
  return cells.map(c => ({ type: c.cell_type, source: c.getSource() }));
}

/**
 * The notebook's load cell: the one above its first prompt cell, else a new one (or a late one moved up) above the
 * first code cell; null when the notebook cannot be changed. The active cell stays the same cell.
 */
export function ensureLoadCell(panel: NotebookPanel): CodeCell | null {
  const nb = panel.content;
  const model = nb.model;
  if (!model || model.readOnly) {
    return null;
  }
  const plan = loadPlan(planCells(panel));
  let index = plan.load;
  if (index < 0) {
    index = plan.insertAt;
    if (plan.late >= 0) {
      model.sharedModel.moveCell(plan.late, index);
    } else {
      model.sharedModel.insertCell(index, { cell_type: 'code', source: LOAD_CELL, metadata: { trusted: true } });
    }
  }
  const cell = nb.widgets[index];
  return cell instanceof CodeCell ? cell : null;
}

/**
 * Run the load cell as a cell of the notebook runs (its count and any output recorded); the kernel's reply, or null
 * without a kernel.
 */
export async function runLoadCell(panel: NotebookPanel, cell: CodeCell): Promise<KernelMessage.IExecuteReplyMsg | null> {
  if (!panel.sessionContext.session?.kernel) {
    return null;
  }
  return (await CodeCell.execute(cell, panel.sessionContext)) ?? null;
}
