/**
 * The cell tags boopiter reads (pure: unit-tested on a model stub). They live in the cell's
 * `metadata.tags`, so every frontend and a headless run read them too (`boopiter_ext/context/build.py`):
 *
 *   boop-hide   the cell is never sent to the model, and reaches none of its tools
 *   boop-pin    the cell is never dropped to fit the context window
 *   boop-model  the cell holds code a reply wrote (its Insert): marked so here, and in what the model reads
 *
 * They are changed only through the cell model's metadata API, so the change is undoable and marks the
 * notebook dirty like any other edit.
 */

export const HIDE_TAG = 'boop-hide';
export const PIN_TAG = 'boop-pin';
/** A cell a reply's Insert or Insert and run made: the model's code, marked so in the notebook and in its context. */
export const MODEL_TAG = 'boop-model';
export type BoopTag = typeof HIDE_TAG | typeof PIN_TAG;

/** What the tags need of a cell model (`ICellModel` has it). */
export interface IMetadataHolder {
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: any): void;
  deleteMetadata(key: string): void;
}

/** The tags in a `metadata.tags` value: its strings (anything else in it is ignored). */
export function tagList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string') : [];
}

export function hasTag(cell: IMetadataHolder, tag: string): boolean {
  return tagList(cell.getMetadata('tags')).includes(tag);
}

/**
 * Put `tag` on the cell or take it off; the other tags (and any non-string entries) stay in their
 * order, and a `tags` list left empty is removed. Returns whether anything changed.
 */
export function setTag(cell: IMetadataHolder, tag: string, on: boolean): boolean {
  const raw = cell.getMetadata('tags');
  const list: unknown[] = Array.isArray(raw) ? [...raw] : [];
  const present = list.includes(tag);
  if (present === on) {
    return false;
  }
  const next = on ? [...list, tag] : list.filter(t => t !== tag);
  if (next.length) {
    cell.setMetadata('tags', next);
  } else {
    cell.deleteMetadata('tags');
  }
  return true;
}

/**
 * Toggle `tag` on several cells as one choice: if any of them lacks it, all get it; otherwise all lose it
 * (so a mixed selection ends up uniform). Returns the new state.
 */
export function toggleTag(cells: readonly IMetadataHolder[], tag: string): boolean {
  const on = cells.some(c => !hasTag(c, tag));
  for (const c of cells) {
    setTag(c, tag, on);
  }
  return on;
}
