/**
 * The dry run's dialog: opened at once ("building…"), filled when the kernel answers. Escape, the close
 * button and Close close it; the body scrolls.
 */

import { Dialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import { DryRunBody, IDryRunOptions } from './dryrun';
import { IPreview } from '../protocol/messages';

/** Show the dry run `answer` will bring; resolves when the dialog is closed. */
export async function showDryRun(answer: Promise<IPreview>, options: IDryRunOptions, label = ''): Promise<void> {
  const body = new DryRunBody(options);
  const dialog = new Dialog({
    title: label ? `Dry run: ${label}` : 'Dry run',
    body: new Widget({ node: body.node }),
    buttons: [Dialog.okButton({ label: 'Close' })],
    hasClose: true
  });
  dialog.addClass('boop-DryRunDialog');
  answer.then(
    preview => body.show(preview),
    error => body.fail(error)
  );
  try {
    await dialog.launch();
  } finally {
    body.dispose();
    dialog.dispose();
  }
}
