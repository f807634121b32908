/** A cell an edit from the model changed, shown: scrolled into view in each notebook view, and highlighted briefly. */

import { NotebookPanel } from '@jupyterlab/notebook';

/** How long a changed cell is highlighted. */
export const FLASH_MS = 1600;

/** Scroll `cellId` into view in `panel` (if it is not) and highlight it briefly. */
export function flashCell(panel: NotebookPanel, cellId: string, editId: string): void {
  const nb = panel.content;
  const index = nb.widgets.findIndex(c => c.model.id === cellId);
  if (index < 0) {
    return;
  }
  const cell = nb.widgets[index];
  cell.node.dataset.boopEdit = editId; // stays: which edit last changed this cell (for tests and inspection)
  void Promise.resolve(nb.scrollToItem(index, 'auto')).catch(() => undefined);
  cell.removeClass('boop-mod-flash');
  void cell.node.offsetWidth; // restart the animation when one cell is changed twice in a row
  cell.addClass('boop-mod-flash');
  const timers = flashTimers.get(cell.node);
  if (timers) {
    clearTimeout(timers);
  }
  flashTimers.set(
    cell.node,
    setTimeout(() => {
      flashTimers.delete(cell.node);
      if (!cell.isDisposed) {
        cell.removeClass('boop-mod-flash');
      }
    }, FLASH_MS)
  );
}
const flashTimers = new WeakMap<HTMLElement, ReturnType<typeof setTimeout>>();
