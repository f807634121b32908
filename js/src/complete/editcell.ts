/**
 * "Edit this cell": the user's instruction for a code cell goes to the kernel (`BoopChannel.rewrite`), whose answering
 * model writes the cell anew; the new version is shown in the cell as a diff to accept or reject, the review the
 * model's own edits get (`BoopChannel.reviewed`), and an accepted one is one undo step.
 */

import { InputDialog, Notification, showErrorMessage } from '@jupyterlab/apputils';
import type { Cell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { BoopChannel } from '../channel/channel';
import type { IRewrite } from '../protocol/messages';

/** Ask for the instruction, then the model's version, then the user's review; one line says what happened. */
export async function editCell(panel: NotebookPanel, cell: Cell, channel: BoopChannel): Promise<string> {
  const asked = await InputDialog.getText({ title: 'Edit this cell', label: 'What should change?', placeholder: 'e.g. add a docstring' });
  const instruction = asked.button.accept ? (asked.value ?? '').trim() : '';
  if (!instruction) {
    return 'cancelled';
  }
  const before = cell.model.sharedModel.getSource();
  const note = Notification.emit('Asking the model for a new version of the cell…', 'in-progress', { autoClose: false });
  let got: IRewrite;
  try {
    got = await channel.rewrite(cell.model.id, instruction, before);
  } catch (e) {
    got = { source: '', reason: e instanceof Error ? e.message : String(e) };
  } finally {
    Notification.dismiss(note);
  }
  const { source, reason } = got;
  if (!source || source === before) {
    await showErrorMessage('Edit this cell', reason || 'The model gave back the cell unchanged.');
    return 'no new version';
  }
  channel.addView(panel);
  const id = `rewrite-${cell.model.id}-${Date.now()}`;
  const outcome = await channel.reviewed({ type: 'edit', id, op: 'edit', cell: cell.model.id, source, expect: before }, `Edit this cell: ${instruction}`, 'Accept');
  return outcome.ok ? 'accepted' : outcome.message;
}
