/**
 * The notebook as the frontend shows it, for the kernel (`{type: 'notebook', cells}` and the hello's `cells`):
 * every code and Markdown cell's id, nbformat type, current text (unsaved edits included) and tags.
 *
 * Cheap for a large notebook: each cell's entry is kept until that cell's text or metadata changes, so a
 * new list reads only the cells that changed (an output streaming into a cell changes nothing here).
 * Typed structurally, so the units run on stubs; `INotebookModel.sharedModel` fits.
 */

import { IDisposable } from '@lumino/disposable';
import { ISignal } from '@lumino/signaling';
import { ShownCell } from '../protocol/messages';
import { tagList } from '../cells/tags';

/** What a shown cell needs of a shared cell (`ISharedCell` has it). */
export interface ISharedCellLike {
  readonly id: string;
  readonly cell_type: string;
  getSource(): string;
  getMetadata(key: string): unknown;
}

/** One cell's entry; null for a cell the kernel is not told about (raw cells). */
export function shownCell(cell: ISharedCellLike): ShownCell | null {
  const type = cell.cell_type;
  if (type !== 'code' && type !== 'markdown') {
    return null;
  }
  return { id: cell.id, cell_type: type, source: cell.getSource(), tags: tagList(cell.getMetadata('tags')) };
}

/** Builds the list, reusing the entries of cells that did not change since the last one. */
export class ShownCellsCache {
  /** The list for `cells`, in their order. */
  build(cells: Iterable<ISharedCellLike>): ShownCell[] {
    const out: ShownCell[] = [];
    for (const cell of cells) {
      let entry = this._entries.get(cell);
      if (entry === undefined) {
        entry = shownCell(cell);
        this._entries.set(cell, entry);
      }
      if (entry) {
        out.push(entry);
      }
    }
    return out;
  }

  /** Forget a cell's entry: its text or tags changed. */
  invalidate(cell: object): void {
    this._entries.delete(cell);
  }

  private _entries = new WeakMap<object, ShownCell | null>();
}

/** A change of one shared cell: only its text and metadata matter here (`CellChange` has both). */
export interface ICellChangeLike {
  sourceChange?: unknown;
  metadataChange?: unknown;
}

export interface IWatchedCell extends ISharedCellLike {
  readonly changed: ISignal<any, ICellChangeLike>;
}

export interface IWatchedNotebook {
  readonly cells: readonly IWatchedCell[];
  readonly changed: ISignal<any, { cellsChange?: unknown }>;
}

/**
 * Follows a notebook's cells: `version` goes up, and `changed` is called, whenever the list the kernel
 * should see changes (cells added, removed or moved; a cell's text or tags edited).
 */
export class ShownCells implements IDisposable {
  constructor(notebook: IWatchedNotebook, changed: () => void = () => undefined) {
    this._notebook = notebook;
    this._onChange = changed;
    notebook.changed.connect(this._onNotebookChanged, this);
    this._follow();
  }

  /** Goes up on every change that matters. */
  get version(): number {
    return this._version;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The cells as the kernel should see them now. */
  snapshot(): ShownCell[] {
    return this._cache.build(this._notebook.cells);
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._notebook.changed.disconnect(this._onNotebookChanged, this);
    for (const cell of this._followed) {
      cell.changed.disconnect(this._onCellChanged, this);
    }
    this._followed.clear();
  }

  private _onNotebookChanged(_: unknown, change: { cellsChange?: unknown }): void {
    if (change.cellsChange) {
      this._follow();
      this._bump();
    }
  }

  private _onCellChanged(cell: IWatchedCell, change: ICellChangeLike): void {
    if (change.sourceChange || change.metadataChange) {
      this._cache.invalidate(cell);
      this._bump();
    }
  }

  /** Listen to every cell now in the notebook, and to no other. */
  private _follow(): void {
    const now = new Set(this._notebook.cells);
    for (const cell of this._followed) {
      if (!now.has(cell)) {
        cell.changed.disconnect(this._onCellChanged, this);
        this._followed.delete(cell);
      }
    }
    for (const cell of now) {
      if (!this._followed.has(cell)) {
        cell.changed.connect(this._onCellChanged, this);
        this._followed.add(cell);
      }
    }
  }

  private _bump(): void {
    this._version++;
    this._onChange();
  }

  private _notebook: IWatchedNotebook;
  private _onChange: () => void;
  private _cache = new ShownCellsCache();
  private _followed = new Set<IWatchedCell>();
  private _version = 0;
  private _disposed = false;
}
