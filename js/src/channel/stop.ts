/**
 * The reply view's Stop (`reply/renderers.ts` calls `stopReply`): a `stop` message to boopiter on the comm's subshell,
 * which the kernel reads while the prompt cell runs, so the reply ends as *interrupted* and the cell without an error.
 * Where the kernel cannot hear it while a cell runs (no comm, or comms not over subshells), the kernel is interrupted
 * instead, as before: the reply is kept, and the cell ends with one line.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
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
