/**
 * The eye and the pin on every code, Markdown and prompt cell: two small toggle buttons in the cell's
 * prompt gutter, left of the execution count, that set and clear the `boop-hide` and `boop-pin` tags.
 * They show while the pointer is over the cell, when it is selected or they have the keyboard focus,
 * and always while on; a hidden cell is dimmed, so what the model will not see shows at a glance.
 *
 * The buttons act on their own cell (not the selection), keep the focus where it was on a click, and
 * take Enter and Space for themselves (no notebook shortcut fires on them).
 */

import { Cell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { CellFollower } from './cellfollower';
import { eyeIcon, eyeOffIcon, pinIcon } from '../icons';
import { flipTag, IMarkIcons, IUndoableNotebook, MarksControl, oneUndoStep } from './marks';
import { HIDE_TAG, MODEL_TAG, PIN_TAG, tagList } from './tags';

const ICONS: IMarkIcons = {
  hideOff: () => eyeIcon.element({ tag: 'span' }),
  hideOn: () => eyeOffIcon.element({ tag: 'span' }),
  pin: () => pinIcon.element({ tag: 'span' })
};

export const HIDDEN_CLASS = 'boop-mod-hidden';
export const PINNED_CLASS = 'boop-mod-pinned';
export const MODEL_CLASS = 'boop-mod-model';

/** The marks of one notebook view: every code and Markdown cell gets its control, kept in step with its tags. */
export class CellMarks extends CellFollower<Cell> {
  constructor(panel: NotebookPanel) {
    super(panel.content, isMarkable, cell => watchMarks(panel, cell));
  }
}

function isMarkable(cell: Cell): boolean {
  return cell.model.type === 'code' || cell.model.type === 'markdown';
}

/** Give `cell` its control and keep both in step with its tags; returns what takes them away. */
function watchMarks(panel: NotebookPanel, cell: Cell): () => void {
  const model = cell.model;
  const notebook = () => (panel.content.model?.sharedModel as unknown as IUndoableNotebook | undefined) ?? null;
  const control = new MarksControl(tag => {
    if (!model.isDisposed) {
      oneUndoStep(notebook(), () => flipTag(model, tag));
    }
  }, ICONS);
  const apply = () => {
    if (cell.isDisposed || model.isDisposed) {
      return;
    }
    const tags = tagList(model.getMetadata('tags'));
    control.update(tags);
    cell.toggleClass(HIDDEN_CLASS, tags.includes(HIDE_TAG));
    cell.toggleClass(PINNED_CLASS, tags.includes(PIN_TAG));
    cell.toggleClass(MODEL_CLASS, tags.includes(MODEL_TAG));
  };
  const onMetadata = (_: unknown, change: { key: string }) => {
    if (change.key === 'tags') {
      apply();
    }
  };
  model.metadataChanged.connect(onMetadata);
  apply();
  // the input area exists once the cell is drawn (a windowed notebook draws cells as they scroll in)
  void cell.ready.then(() => {
    const area = cell.isDisposed ? null : cell.inputArea;
    if (area && !control.node.isConnected) {
      area.node.append(control.node);
    }
  });
  return () => {
    control.node.remove();
    if (!model.isDisposed) {
      model.metadataChanged.disconnect(onMetadata);
    }
    if (!cell.isDisposed) {
      cell.removeClass(HIDDEN_CLASS);
      cell.removeClass(PINNED_CLASS);
    }
  };
}
