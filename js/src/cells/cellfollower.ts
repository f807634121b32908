/**
 * Following the cells of a notebook view: `track(cell)` runs once for each cell widget that `accepts`,
 * as cells come (or the notebook gets its model), and the release function it returned runs once the
 * cell is gone or the follower is disposed. Changes are handled a microtask later, once the notebook has
 * made the widgets of the cells that changed, and a burst of them (Run All, a paste) is handled once.
 *
 * Typed structurally, so the units run on stubs; a `Notebook` (`panel.content`) fits.
 */

import { IDisposable } from '@lumino/disposable';
import { ISignal } from '@lumino/signaling';

/** What a follower needs of a notebook view (`Notebook` has it). */
export interface IFollowedNotebook<C> {
  readonly modelChanged: ISignal<any, void>;
  readonly model: { readonly cells: { readonly changed: ISignal<any, any> } } | null;
  readonly widgets: ReadonlyArray<C>;
}

export class CellFollower<C extends object> implements IDisposable {
  constructor(
    notebook: IFollowedNotebook<C>,
    accepts: (cell: C) => boolean,
    track: (cell: C) => () => void
  ) {
    this._notebook = notebook;
    this._accepts = accepts;
    this._track = track;
    notebook.modelChanged.connect(this._onModel, this);
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
    this._notebook.modelChanged.disconnect(this._onModel, this);
    this._cells?.changed.disconnect(this._schedule, this);
    this._cells = null;
    for (const release of this._tracked.values()) {
      release();
    }
    this._tracked.clear();
  }

  /** Track the accepted cells not tracked yet; release the ones gone. */
  sync(): void {
    if (this._disposed) {
      return;
    }
    const alive = new Set<C>();
    for (const cell of this._notebook.widgets) {
      if (!this._accepts(cell)) {
        continue;
      }
      alive.add(cell);
      if (!this._tracked.has(cell)) {
        this._tracked.set(cell, this._track(cell));
      }
    }
    for (const [cell, release] of this._tracked) {
      if (!alive.has(cell)) {
        release();
        this._tracked.delete(cell);
      }
    }
  }

  private _onModel(): void {
    this._cells?.changed.disconnect(this._schedule, this);
    this._cells = this._notebook.model?.cells ?? null;
    this._cells?.changed.connect(this._schedule, this);
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

  private _notebook: IFollowedNotebook<C>;
  private _accepts: (cell: C) => boolean;
  private _track: (cell: C) => () => void;
  private _cells: { readonly changed: ISignal<any, any> } | null = null;
  private _tracked = new Map<C, () => void>();
  private _scheduled = false;
  private _disposed = false;
}
