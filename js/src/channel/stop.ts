/**
 * The reply view's actions that go through the notebook's channel: Ask again (`freshReply`), a fix put in its cell
 * (`replaceCell`), and Stop.
 *
 * Stop (`reply/renderers.ts` calls `stopReply`): a `stop` message to boopiter on the comm's subshell,
 * which the kernel reads while the prompt cell runs, so the reply ends as *interrupted* and the cell without an error.
 * Where the kernel cannot hear it while a cell runs (no comm, or comms not over subshells), the kernel is interrupted
 * instead, as before: the reply is kept, and the cell ends with one line.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { runCell } from '../reply/insert';
import { IBoopChannels } from './channels';

let registry: IBoopChannels | null = null;

/** Where `stopReply` finds the channels (the channels plugin sets it as it starts). */
export function setStopChannels(channels: IBoopChannels | null): void {
  registry = channels;
}

/** Tell the kernel that the next run of prompt cell `cellId` asks the model again; false if it cannot hear it. */
export function freshReply(panel: NotebookPanel, cellId: string): boolean {
  return registry?.get(panel).fresh(cellId) ?? false;
}

/** Stop the reply streaming in cell `cellId` of `panel`'s notebook. */
export async function stopReply(panel: NotebookPanel, cellId: string): Promise<void> {
  if (registry?.get(panel).stop(cellId)) {
    return;
  }
  await panel.sessionContext.session?.kernel?.interrupt();
}

/**
 * A reply's fix for cell `cellId` (the cell a `%%prompt --fix` asked about): shown there as a diff; once the user
 * accepts it, the cell's text is replaced (noted for prompt cell `promptId`, whose bar undoes it) and the cell runs as
 * the notebook runs any. One line says what happened.
 */
export async function replaceCell(panel: NotebookPanel, promptId: string, cellId: string, code: string): Promise<string> {
  const channel = registry?.get(panel);
  const cell = panel.content.widgets.find(c => c.model.id === cellId);
  if (!channel || !cell) {
    return 'That cell is gone';
  }
  channel.addView(panel);
  const id = `replace-${cellId}-${Date.now()}`;
  const req = { type: 'edit' as const, id, op: 'edit' as const, prompt: promptId, cell: cellId, source: code, expect: cell.model.sharedModel.getSource() };
  const outcome = await channel.reviewed(req, 'The reply proposes this fix for the cell', 'Accept and run');
  if (!outcome.ok) {
    return outcome.message.includes('rejected') ? 'Rejected' : 'Could not change the cell';
  }
  if (!cell.isDisposed && panel.content.widgets.includes(cell)) {
    await runCell(panel, cell);
  }
  return 'Fixed ✓ · running';
}
