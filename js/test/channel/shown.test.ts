import { Signal } from '@lumino/signaling';
import { describe, expect, it } from 'vitest';
import { ICellChangeLike, IWatchedCell, IWatchedNotebook, shownCell, ShownCells, ShownCellsCache } from '../../src/channel/shown';

/** A shared cell: its text and metadata, how often they were read, and its `changed` signal. */
class CellStub implements IWatchedCell {
  constructor(
    readonly id: string,
    readonly cell_type: string,
    public source: string,
    public metadata: { [k: string]: unknown } = {}
  ) {}
  reads = 0;
  readonly changed = new Signal<this, ICellChangeLike>(this);
  getSource(): string {
    this.reads++;
    return this.source;
  }
  getMetadata(key: string): unknown {
    return this.metadata[key];
  }
  edit(source: string): void {
    this.source = source;
    this.changed.emit({ sourceChange: [{ insert: source }] });
  }
}

class NotebookStub implements IWatchedNotebook {
  constructor(public cells: CellStub[]) {}
  readonly changed = new Signal<this, { cellsChange?: unknown }>(this);
  splice(at: number, remove: number, ...add: CellStub[]): void {
    this.cells.splice(at, remove, ...add);
    this.changed.emit({ cellsChange: [{ retain: at }] });
  }
}

describe('shownCell', () => {
  it('sends code and Markdown cells with their nbformat type, text and string tags; not raw cells', () => {
    expect(shownCell(new CellStub('a', 'code', 'x = 1', { tags: ['boop-pin', 3] }))).toEqual({
      id: 'a',
      cell_type: 'code',
      source: 'x = 1',
      tags: ['boop-pin']
    });
    expect(shownCell(new CellStub('p', 'code', '%%prompt\nhi'))?.cell_type).toBe('code'); // prompts are code cells
    expect(shownCell(new CellStub('m', 'markdown', '# T'))?.tags).toEqual([]);
    expect(shownCell(new CellStub('r', 'raw', 'raw'))).toBeNull();
  });
});

describe('ShownCellsCache', () => {
  it('reads a cell again only once it was invalidated', () => {
    const cells = [new CellStub('a', 'code', '1'), new CellStub('r', 'raw', ''), new CellStub('b', 'markdown', '2')];
    const cache = new ShownCellsCache();
    expect(cache.build(cells).map(c => c.id)).toEqual(['a', 'b']);
    cache.build(cells);
    expect(cells.map(c => c.reads)).toEqual([1, 0, 1]);
    cells[0].source = '1!';
    cache.invalidate(cells[0]);
    expect(cache.build(cells)[0].source).toBe('1!');
    expect(cells.map(c => c.reads)).toEqual([2, 0, 1]);
  });
});

describe('ShownCells', () => {
  it('follows text and tag changes, not outputs, and rereads only the changed cell', () => {
    const a = new CellStub('a', 'code', 'x = 1');
    const b = new CellStub('b', 'code', 'y = 2');
    let calls = 0;
    const shown = new ShownCells(new NotebookStub([a, b]), () => calls++);
    expect(shown.snapshot().map(c => c.source)).toEqual(['x = 1', 'y = 2']);
    const v = shown.version;
    b.changed.emit({ outputsChange: [] } as ICellChangeLike);
    expect([shown.version, calls]).toEqual([v, 0]);
    b.edit('y = 3');
    a.metadata.tags = ['boop-hide'];
    a.changed.emit({ metadataChange: new Map() });
    expect([shown.version, calls]).toEqual([v + 2, 2]);
    expect(shown.snapshot()).toEqual([
      { id: 'a', cell_type: 'code', source: 'x = 1', tags: ['boop-hide'] },
      { id: 'b', cell_type: 'code', source: 'y = 3', tags: [] }
    ]);
    expect([a.reads, b.reads]).toEqual([2, 2]);
  });

  it('follows cells added, moved and removed, and lets go of removed ones', () => {
    const a = new CellStub('a', 'code', 'a');
    const b = new CellStub('b', 'markdown', 'b');
    const nb = new NotebookStub([a]);
    const shown = new ShownCells(nb);
    nb.splice(1, 0, b);
    expect(shown.snapshot().map(c => c.id)).toEqual(['a', 'b']);
    nb.splice(0, 1);
    nb.splice(1, 0, a); // moved below b
    expect(shown.snapshot().map(c => c.id)).toEqual(['b', 'a']);
    nb.splice(1, 1);
    const v = shown.version;
    a.edit('gone');
    expect(shown.version).toBe(v); // no longer followed
    shown.dispose();
    b.edit('after dispose');
    expect(shown.version).toBe(v);
  });

  it('builds the list of a large notebook quickly, and again from its cache', () => {
    const cells = Array.from({ length: 5000 }, (_, i) => new CellStub(`c${i}`, i % 5 ? 'code' : 'markdown', `x${i} = ${'y'.repeat(200)}`));
    const shown = new ShownCells(new NotebookStub(cells));
    let t = performance.now();
    expect(shown.snapshot()).toHaveLength(5000);
    const first = performance.now() - t;
    cells[17].edit('changed');
    t = performance.now();
    expect(shown.snapshot()[17].source).toBe('changed');
    const again = performance.now() - t;
    expect(first).toBeLessThan(200);
    expect(again).toBeLessThan(50);
    expect(cells.reduce((n, c) => n + c.reads, 0)).toBe(5001);
  });
});
