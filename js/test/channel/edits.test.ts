import { describe, expect, it } from 'vitest';
import { applyEdit, checkEdit, diffRange, IEditableCell, IEditableNotebook, MAX_EDIT_SOURCE } from '../../src/channel/edits';
import { Journal } from '../../src/channel/journal';
import { IEditMessage, IReviewedEdit } from '../../src/protocol/messages';
import { parseKernelMessage } from '../../src/protocol/parse';

class CellStub implements IEditableCell {
  constructor(readonly id: string, readonly cell_type: string, public source: string, public metadata: { [k: string]: unknown } = {}) {}
  updates: [number, number, string][] = [];
  getSource(): string {
    return this.source;
  }
  updateSource(start: number, end: number, value = ''): void {
    this.updates.push([start, end, value]);
    this.source = this.source.slice(0, start) + value + this.source.slice(end);
  }
}

/** A shared notebook: its cells, and a log of transactions and undo captures (an undo step is stop..stop). */
class NotebookStub implements IEditableNotebook {
  constructor(public cells: CellStub[]) {}
  log: string[] = [];
  private _open = false;
  readonly undoManager = { stopCapturing: () => this.log.push('stop') };
  transact(f: () => void, undoable?: boolean): void {
    this.log.push(`begin${undoable ? ' undoable' : ''}`);
    this._open = true;
    f();
    this._open = false;
    this.log.push('end');
  }
  deleteCell(index: number): void {
    if (!this._open) {
      throw new Error('delete outside a transaction');
    }
    this.cells.splice(index, 1);
  }
  insertCell(index: number, cell: { cell_type: string; source: string; metadata?: { [k: string]: unknown } }): IEditableCell {
    if (!this._open) {
      throw new Error('insert outside a transaction');
    }
    const c = new CellStub(`new${index}`, cell.cell_type, cell.source, cell.metadata);
    this.cells.splice(index, 0, c);
    return c;
  }
  sources(): string[] {
    return this.cells.map(c => c.source);
  }
}

const notebook = () =>
  new NotebookStub([new CellStub('c1', 'code', 'x = 1'), new CellStub('m2', 'markdown', '# Notes'), new CellStub('r3', 'raw', 'raw'), new CellStub('c4', 'code', 'y = 2')]);
const edit = (fields: object) => parseKernelMessage({ type: 'edit', id: 'e1', ...fields }) as IEditMessage;

describe('applyEdit: add', () => {
  it('adds a code cell below the named one, in one undo step, and says where', () => {
    const nb = notebook();
    const out = applyEdit(nb, edit({ op: 'add', after: 'c1', source: 'z = 3', cell_type: 'code' }));
    expect(out).toEqual({ ok: true, cellId: 'new1', message: 'done: added a code cell new1 below c1 (Undo in the notebook reverts it)' });
    expect(nb.sources()).toEqual(['x = 1', 'z = 3', '# Notes', 'raw', 'y = 2']);
    expect(nb.cells[1].metadata).toEqual({ trusted: true, tags: ['boop-model'] }); // the model's cell, marked
    expect(nb.log).toEqual(['stop', 'begin undoable', 'end', 'stop']);
  });

  it('adds Markdown and prompt cells, and below the last cell', () => {
    const nb = notebook();
    expect(applyEdit(nb, edit({ op: 'add', after: 'c4', source: '## More', cell_type: 'markdown' })).message).toMatch(
      /^done: added a Markdown cell new4 below c4/
    );
    expect(nb.cells[4]).toMatchObject({ cell_type: 'markdown', source: '## More', metadata: {} });
    expect(applyEdit(nb, edit({ op: 'add', after: 'm2', source: '%%prompt\nWhy?', cell_type: 'code' })).message).toMatch(
      /^done: added a prompt cell new2 below m2/
    );
  });

  it('refuses an unknown cell, a raw cell, and a bad cell type, changing nothing', () => {
    const nb = notebook();
    expect(applyEdit(nb, edit({ op: 'add', after: 'gone', source: 'z', cell_type: 'code' }))).toEqual({
      ok: false,
      message: 'refused: no code or Markdown cell gone in the notebook (it was deleted, or the id is wrong); list the cells again'
    });
    expect(applyEdit(nb, edit({ op: 'add', after: 'r3', source: 'z', cell_type: 'code' })).ok).toBe(false);
    expect(applyEdit(nb, edit({ op: 'add', after: 'c1', source: 'z', cell_type: 'raw' }))).toEqual({
      ok: false,
      message: "refused: `cell_type` must be 'code' or 'markdown'"
    });
    expect(nb.sources()).toEqual(notebook().sources());
    expect(nb.log).toEqual([]);
  });
});

describe('applyEdit: edit', () => {
  it('replaces the text when the cell still holds what the model read, changing only what differs', () => {
    const nb = notebook();
    const out = applyEdit(nb, edit({ op: 'edit', cell: 'c4', source: 'y = 20', expect: 'y = 2' }));
    expect(out).toEqual({ ok: true, cellId: 'c4', message: 'done: replaced the text of cell c4 (Undo in the notebook reverts it)' });
    expect(nb.cells[3].source).toBe('y = 20');
    expect(nb.cells[3].updates).toEqual([[5, 5, '0']]);
    expect(nb.log).toEqual(['stop', 'begin undoable', 'end', 'stop']);
  });

  it('refuses a cell the user changed since the model read it', () => {
    const nb = notebook();
    const out = applyEdit(nb, edit({ op: 'edit', cell: 'c1', source: 'x = 2', expect: 'x = 0' }));
    expect(out.ok).toBe(false);
    expect(out.message).toBe('refused: cell c1 changed since the model read it (the user edited it); read it again before editing it');
    expect(nb.cells[0].source).toBe('x = 1');
    expect(nb.log).toEqual([]);
  });

  it('refuses an unknown cell; says so when nothing would change', () => {
    const nb = notebook();
    expect(applyEdit(nb, edit({ op: 'edit', cell: 'nope', source: 'a', expect: 'b' })).message).toMatch(/^refused: no code or Markdown cell nope/);
    expect(applyEdit(nb, edit({ op: 'edit', cell: 'm2', source: '# Notes', expect: '# Notes' }))).toEqual({
      ok: true,
      cellId: 'm2',
      message: 'done: cell m2 already holds that text; nothing changed'
    });
    expect(nb.log).toEqual([]);
  });
});

describe('applyEdit: refusals of the request itself', () => {
  it('refuses an unknown op, missing fields, a read-only notebook and too long a text', () => {
    const nb = notebook();
    expect(applyEdit(nb, edit({ op: 'move', cell: 'c1' })).message).toBe('refused: unknown op "move"');
    expect(applyEdit(nb, edit({ op: 'delete', cell: 'c1' })).message).toBe('refused: `expect` must be text');
    expect(applyEdit(nb, edit({ op: 'add', after: 'c1', source: 'x', prompt: 7 })).message).toBe('refused: `prompt` must be a cell id');
    expect(applyEdit(nb, edit({ op: 'edit', cell: 'c1', source: 'x' })).message).toBe('refused: `expect` must be text');
    expect(applyEdit(nb, edit({ op: 'edit', cell: 'c1', source: 'x', expect: 'x = 1' }), true).message).toBe(
      'refused: the notebook is read-only here'
    );
    const long = 'x'.repeat(MAX_EDIT_SOURCE + 1);
    expect(applyEdit(nb, edit({ op: 'add', after: 'c1', source: long, cell_type: 'code' })).message).toMatch(/longer than 1,000,000/);
    expect(nb.log).toEqual([]);
  });

  it('keeps a message on one line whatever the ids hold', () => {
    const nb = notebook();
    const out = applyEdit(nb, edit({ op: 'edit', cell: 'a\nb\u2028' + 'c'.repeat(200), source: '', expect: '' }));
    expect(out.message).not.toMatch(/[\n\u2028]/);
    expect(out.message.length).toBeLessThan(200);
  });
});

describe('diffRange', () => {
  it('finds the changed middle', () => {
    expect(diffRange('abcdef', 'abXYef')).toEqual({ start: 2, end: 4, text: 'XY' });
    expect(diffRange('aaa', 'aaaa')).toEqual({ start: 3, end: 3, text: 'a' });
    expect(diffRange('', 'new')).toEqual({ start: 0, end: 0, text: 'new' });
    expect(diffRange('old', '')).toEqual({ start: 0, end: 3, text: '' });
  });

  it('never splits a surrogate pair', () => {
    const before = 'x 😀 y';
    const after = 'x 😃 y';
    const r = diffRange(before, after);
    expect(before.slice(0, r.start) + r.text + before.slice(r.end)).toBe(after);
    expect(r.text).toBe('😃');
  });
});

describe('applyEdit: delete', () => {
  it('deletes the cell when it still holds what the model read, in one undo step', () => {
    const nb = notebook();
    const out = applyEdit(nb, edit({ op: 'delete', cell: 'm2', expect: '# Notes', prompt: 'p9' }));
    expect(out).toEqual({ ok: true, cellId: 'm2', message: 'done: deleted cell m2 (Undo in the notebook reverts it)' });
    expect(nb.sources()).toEqual(['x = 1', 'raw', 'y = 2']);
    expect(nb.log).toEqual(['stop', 'begin undoable', 'end', 'stop']);
  });

  it('refuses a cell that changed since, or is gone, deleting nothing', () => {
    const nb = notebook();
    expect(applyEdit(nb, edit({ op: 'delete', cell: 'c1', expect: 'x = 0' })).message).toMatch(
      /^refused: cell c1 changed since the model read it \(the user edited it\); read it again before deleting it$/
    );
    expect(applyEdit(nb, edit({ op: 'delete', cell: 'r3', expect: 'raw' })).ok).toBe(false); // a raw cell is not the model's to touch
    expect(nb.sources()).toEqual(['x = 1', '# Notes', 'raw', 'y = 2']);
  });
});

describe('checkEdit', () => {
  it('says why a reviewed change cannot be made now, else where its cell is', () => {
    const nb = notebook();
    expect(checkEdit(nb, edit({ op: 'edit', cell: 'c4', source: 'y = 3', expect: 'y = 2' }) as IReviewedEdit)).toEqual({ refusal: null, index: 3 });
    expect(checkEdit(nb, edit({ op: 'edit', cell: 'c4', source: 'y', expect: 'y = 2' }) as IReviewedEdit, true).refusal!.message).toBe(
      'refused: the notebook is read-only here'
    );
    expect(checkEdit(nb, edit({ op: 'delete', cell: 'zz', expect: '' }) as IReviewedEdit).refusal!.message).toMatch(/no code or Markdown cell zz/);
  });
});

describe('Journal', () => {
  const add = (nb: NotebookStub, after: string, source: string) =>
    applyEdit(nb, edit({ op: 'add', after, source, cell_type: 'code' })).cellId!;

  it("undoes a prompt's changes, the last first, as one transaction: adds, edits and a deletion", () => {
    const nb = notebook();
    const j = new Journal();
    const id = add(nb, 'c1', 'z = 3');
    j.record('p', { op: 'add', cellId: id, source: 'z = 3' });
    applyEdit(nb, edit({ op: 'edit', cell: 'c4', source: 'y = 20', expect: 'y = 2' }));
    j.record('p', { op: 'edit', cellId: 'c4', before: 'y = 2', after: 'y = 20' });
    applyEdit(nb, edit({ op: 'delete', cell: 'm2', expect: '# Notes' }));
    j.record('p', { op: 'delete', index: 2, afterId: id, cell: { cell_type: 'markdown', source: '# Notes', metadata: {} } });
    j.record('other', { op: 'add', cellId: 'c1', source: 'x = 1' }); // another prompt's: untouched
    expect(nb.sources()).toEqual(['x = 1', 'z = 3', 'raw', 'y = 20']);
    nb.log = [];
    expect(j.undo(nb, 'p')).toBe('Undone: 3 changes.');
    expect(nb.sources()).toEqual(['x = 1', '# Notes', 'raw', 'y = 2']);
    expect(nb.log).toEqual(['stop', 'begin undoable', 'end', 'stop']);
    expect(j.undo(nb, 'p')).toBe('Undone: 0 changes.'); // once
    expect(j.record('p', { op: 'add', cellId: 'c1', source: 'x = 1' })).toBe(1); // counted afresh
  });

  it('keeps what the user changed since, and says so', () => {
    const nb = notebook();
    const j = new Journal();
    const id = add(nb, 'c1', 'z = 3');
    j.record('p', { op: 'add', cellId: id, source: 'z = 3' });
    j.record('p', { op: 'edit', cellId: 'c4', before: 'y = 1', after: 'y = 2' });
    nb.cells[1].source = 'z = 3  # mine now';
    nb.cells[4].source = 'y = 2  # typed';
    expect(j.undo(nb, 'p')).toBe('Undone: 0 changes; 2 cells you changed since kept as you left them.');
    expect(nb.sources()).toEqual(['x = 1', 'z = 3  # mine now', '# Notes', 'raw', 'y = 2  # typed']);
  });
});

describe('parse: a step of agent mode', () => {
  it('reads a run request, asking every time unless the kernel says plainly it need not', () => {
    expect(edit({ op: 'run', source: 'x = 1', agent: 'a1', attend: false, reason: '', prompt: 'p' })).toEqual({
      type: 'edit', id: 'e1', op: 'run', prompt: 'p', source: 'x = 1', agent: 'a1', attend: false, reason: ''
    });
    expect((edit({ op: 'run', source: 'x', agent: 'a1' }) as { attend: boolean }).attend).toBe(true);
    expect((edit({ op: 'run', source: 'x', agent: 'a1', attend: 'no' }) as { attend: boolean }).attend).toBe(true);
    expect(edit({ op: 'run', source: 'x' })).toEqual({ type: 'edit', id: 'e1', op: 'invalid', problem: '`agent` must be text' });
    expect(applyEdit(notebook(), edit({ op: 'run', source: 'x', agent: 'a' })).ok).toBe(false); // not an edit
  });
});
