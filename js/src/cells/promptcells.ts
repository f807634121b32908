/**
 * Prompt cells in the notebook: any code cell whose source starts with `%%prompt` gets the
 * `boop-PromptCell` class (a label and a coloured edge, from theme variables) and a Markdown editor
 * mode. The notebook resets code cells' modes when the kernel's language_info arrives and when cells
 * are inserted or pasted, so the mode is re-applied whenever it changes; it goes back to the
 * notebook's code mode when the source stops starting with `%%prompt`.
 */

import { Cell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { CellFollower } from './cellfollower';
import { isPromptSource, PROMPT_MIME, PROMPT_PREFIX, PROMPT_TEMPLATE, touchesPrefix } from './prompt';

export const PROMPT_CLASS = 'boop-PromptCell';

/** The prompt cells of one notebook view: each code cell's look and editor mode follow its source. */
export class PromptCells extends CellFollower<Cell> {
  /** `changed(cell)`: a cell became a prompt cell or stopped being one. */
  constructor(panel: NotebookPanel, changed: (cell: Cell) => void = () => undefined) {
    super(panel.content, cell => cell.model.type === 'code', cell => watchPrompt(panel, cell, changed));
  }
}

/** Keep `cell`'s class and mode in step with its source (and put the mode back when the notebook resets it). */
function watchPrompt(panel: NotebookPanel, cell: Cell, changed: (cell: Cell) => void): () => void {
  const model = cell.model;
  const apply = () => applyPrompt(panel, cell, changed);
  const onSource = (_: unknown, change: { sourceChange?: ReadonlyArray<{ retain?: number }> | null }) => {
    if (change.sourceChange && touchesPrefix(change.sourceChange)) {
      apply();
    }
  };
  model.sharedModel.changed.connect(onSource as any);
  model.mimeTypeChanged.connect(apply);
  apply();
  return () => {
    if (!model.isDisposed) {
      model.sharedModel.changed.disconnect(onSource as any);
      model.mimeTypeChanged.disconnect(apply);
    }
  };
}

function applyPrompt(panel: NotebookPanel, cell: Cell, changed: (cell: Cell) => void): void {
  if (cell.isDisposed || cell.model.isDisposed) {
    return;
  }
  const prompt = startsPrompt(cell);
  if (cell.hasClass(PROMPT_CLASS) !== prompt) {
    cell.toggleClass(PROMPT_CLASS, prompt);
    changed(cell);
  }
  const mime = cell.model.mimeType;
  if (prompt && mime !== PROMPT_MIME) {
    cell.model.mimeType = PROMPT_MIME;
  } else if (!prompt && mime === PROMPT_MIME) {
    cell.model.mimeType = panel.content.codeMimetype;
  }
}

/** Whether `cell` is a prompt cell: a code cell whose source starts with `%%prompt`. */
export function isPromptCell(cell: Cell | null | undefined): cell is Cell {
  return !!cell && !cell.isDisposed && cell.model.type === 'code' && startsPrompt(cell);
}

function startsPrompt(cell: Cell): boolean {
  return isPromptSource(cell.model.sharedModel.getSource().slice(0, PROMPT_PREFIX));
}

/**
 * Insert a prompt cell (`source`) below the active cell and put the cursor on its second line, in edit mode (unless
 * `edit` is false); `inserted()` runs right after the insertion, before the cursor moves (the first prompt cell's load
 * cell goes in above it there).
 */
export async function insertPromptCell(
  panel: NotebookPanel,
  inserted: () => void = () => undefined,
  source: string = PROMPT_TEMPLATE,
  edit = true
): Promise<Cell | null> {
  const nb = panel.content;
  const model = nb.model;
  if (!model || nb.model?.readOnly) {
    return null;
  }
  const at = nb.widgets.length ? nb.activeCellIndex + 1 : 0;
  model.sharedModel.insertCell(at, { cell_type: 'code', source, metadata: { trusted: true } });
  nb.deselectAll();
  nb.activeCellIndex = at;
  inserted(); // the active cell stays the prompt cell, wherever it is now
  const index = nb.activeCellIndex;
  const cell = nb.widgets[index];
  await nb.scrollToItem(index, 'auto');
  await cell.ready;
  if (!edit) {
    return cell;
  }
  nb.mode = 'edit';
  const editor = cell.editor;
  if (editor) {
    editor.setCursorPosition({ line: 1, column: 0 });
    editor.focus();
  }
  return cell;
}
