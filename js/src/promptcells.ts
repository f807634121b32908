/**
 * Prompt cells in the notebook: any code cell whose source starts with `%%prompt` gets the
 * `boop-PromptCell` class (a label and a coloured edge, from theme variables) and a Markdown editor
 * mode. The notebook resets code cells' modes when the kernel's language_info arrives and when cells
 * are inserted or pasted, so the mode is re-applied whenever it changes; it goes back to the
 * notebook's code mode when the source stops starting with `%%prompt`.
 */

import { Cell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { IDisposable } from '@lumino/disposable';
import { isPromptSource, PROMPT_MIME, PROMPT_PREFIX, PROMPT_TEMPLATE, touchesPrefix } from './prompt';

export const PROMPT_CLASS = 'boop-PromptCell';

export class PromptCells implements IDisposable {
  constructor(panel: NotebookPanel) {
    this._panel = panel;
    panel.content.modelChanged.connect(this._onModel, this);
    this._onModel();
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._panel.content.modelChanged.disconnect(this._onModel, this);
    this._panel.content.model?.cells.changed.disconnect(this._schedule, this);
    for (const release of this._tracked.values()) {
      release();
    }
    this._tracked.clear();
  }

  /** Look at every code cell (new ones get their watchers). */
  sync(): void {
    if (this._disposed) {
      return;
    }
    const alive = new Set<Cell>();
    for (const cell of this._panel.content.widgets) {
      if (cell.model.type !== 'code') {
        continue;
      }
      alive.add(cell);
      if (!this._tracked.has(cell)) {
        this._tracked.set(cell, this._watch(cell));
      }
      this._apply(cell);
    }
    for (const [cell, release] of this._tracked) {
      if (!alive.has(cell)) {
        release();
        this._tracked.delete(cell);
      }
    }
  }

  private _onModel(): void {
    this._panel.content.model?.cells.changed.connect(this._schedule, this);
    this._schedule();
  }

  private _schedule(): void {
    if (this._scheduled) {
      return;
    }
    this._scheduled = true;
    // after the notebook has made the widgets of the cells that changed
    void Promise.resolve().then(() => {
      this._scheduled = false;
      this.sync();
    });
  }

  private _watch(cell: Cell): () => void {
    const model = cell.model;
    const onSource = (_: unknown, change: { sourceChange?: ReadonlyArray<{ retain?: number }> | null }) => {
      if (change.sourceChange && touchesPrefix(change.sourceChange)) {
        this._apply(cell);
      }
    };
    const onMime = () => this._apply(cell);
    model.sharedModel.changed.connect(onSource as any);
    model.mimeTypeChanged.connect(onMime);
    return () => {
      if (!model.isDisposed) {
        model.sharedModel.changed.disconnect(onSource as any);
        model.mimeTypeChanged.disconnect(onMime);
      }
    };
  }

  private _apply(cell: Cell): void {
    if (cell.isDisposed || cell.model.isDisposed) {
      return;
    }
    const prompt = isPromptSource(cell.model.sharedModel.getSource().slice(0, PROMPT_PREFIX));
    cell.toggleClass(PROMPT_CLASS, prompt);
    const mime = cell.model.mimeType;
    if (prompt && mime !== PROMPT_MIME) {
      cell.model.mimeType = PROMPT_MIME;
    } else if (!prompt && mime === PROMPT_MIME) {
      cell.model.mimeType = this._panel.content.codeMimetype;
    }
  }

  private _panel: NotebookPanel;
  private _tracked = new Map<Cell, () => void>();
  private _scheduled = false;
  private _disposed = false;
}

/** Insert a prompt cell below the active cell and put the cursor on its second line, in edit mode. */
export async function insertPromptCell(panel: NotebookPanel): Promise<Cell | null> {
  const nb = panel.content;
  const model = nb.model;
  if (!model || nb.model?.readOnly) {
    return null;
  }
  const index = nb.widgets.length ? nb.activeCellIndex + 1 : 0;
  model.sharedModel.insertCell(index, { cell_type: 'code', source: PROMPT_TEMPLATE, metadata: { trusted: true } });
  nb.deselectAll();
  nb.activeCellIndex = index;
  const cell = nb.widgets[index];
  await nb.scrollToItem(index, 'auto');
  await cell.ready;
  nb.mode = 'edit';
  const editor = cell.editor;
  if (editor) {
    editor.setCursorPosition({ line: 1, column: 0 });
    editor.focus();
  }
  return cell;
}
