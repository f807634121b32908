import { describe, expect, it } from 'vitest';
import { hasTag, HIDE_TAG, IMetadataHolder, PIN_TAG, setTag, tagList, toggleTag } from '../../src/cells/tags';

/** A cell model's metadata API, recording every call (the real one copies values in and out). */
class CellStub implements IMetadataHolder {
  constructor(public metadata: { [key: string]: unknown } = {}) {}
  calls: string[] = [];
  getMetadata(key: string): unknown {
    return structuredClone(this.metadata[key]);
  }
  setMetadata(key: string, value: unknown): void {
    this.calls.push(`set ${key}`);
    this.metadata[key] = structuredClone(value);
  }
  deleteMetadata(key: string): void {
    this.calls.push(`delete ${key}`);
    delete this.metadata[key];
  }
}

describe('tags', () => {
  it('reads only the strings of a tags list', () => {
    expect(tagList(['a', 3, null, 'b'])).toEqual(['a', 'b']);
    expect(tagList('boop-hide')).toEqual([]);
    expect(tagList(undefined)).toEqual([]);
    expect(hasTag(new CellStub({ tags: ['x', HIDE_TAG] }), HIDE_TAG)).toBe(true);
    expect(hasTag(new CellStub({ tags: 'boop-hide' }), HIDE_TAG)).toBe(false);
  });

  it('adds a tag after the others, through the metadata API', () => {
    const cell = new CellStub({ tags: ['keep', 7], other: 1 });
    expect(setTag(cell, PIN_TAG, true)).toBe(true);
    expect(cell.metadata).toEqual({ tags: ['keep', 7, PIN_TAG], other: 1 });
    expect(cell.calls).toEqual(['set tags']);
  });

  it('changes nothing when the tag is already as asked', () => {
    const cell = new CellStub({ tags: [HIDE_TAG] });
    expect(setTag(cell, HIDE_TAG, true)).toBe(false);
    expect(setTag(new CellStub(), HIDE_TAG, false)).toBe(false);
    expect(cell.calls).toEqual([]);
  });

  it('removes a tag, and the tags key once it is empty', () => {
    const cell = new CellStub({ tags: ['a', HIDE_TAG] });
    setTag(cell, HIDE_TAG, false);
    expect(cell.metadata).toEqual({ tags: ['a'] });
    setTag(cell, PIN_TAG, true);
    setTag(cell, 'a', false);
    setTag(cell, PIN_TAG, false);
    expect(cell.metadata).toEqual({});
    expect(cell.calls.at(-1)).toBe('delete tags');
  });

  it('toggles a selection as one choice: any cell without the tag means all get it', () => {
    const a = new CellStub({ tags: [HIDE_TAG] });
    const b = new CellStub();
    expect(toggleTag([a, b], HIDE_TAG)).toBe(true);
    expect([hasTag(a, HIDE_TAG), hasTag(b, HIDE_TAG)]).toEqual([true, true]);
    expect(a.calls).toEqual([]); // already had it
    expect(toggleTag([a, b], HIDE_TAG)).toBe(false);
    expect([a.metadata, b.metadata]).toEqual([{}, {}]);
  });
});
