import { Signal } from '@lumino/signaling';
import { describe, expect, it } from 'vitest';
import { CellFollower, IFollowedNotebook } from '../../src/cells/cellfollower';

interface CellStub {
  name: string;
  type: string;
}

class CellsStub {
  readonly changed = new Signal<this, unknown>(this);
}

/** A notebook view: its cell widgets, and a model whose cells list says when it changed. */
class NotebookStub implements IFollowedNotebook<CellStub> {
  readonly modelChanged = new Signal<this, void>(this);
  model: { cells: CellsStub } | null = { cells: new CellsStub() };
  widgets: CellStub[] = [];

  /** Change the cells as the notebook does: the widgets first, then the list's signal. */
  set(...cells: CellStub[]): void {
    this.widgets = cells;
    this.model?.cells.changed.emit(undefined);
  }
  swapModel(): CellsStub {
    const old = this.model!.cells;
    this.model = { cells: new CellsStub() };
    this.modelChanged.emit(undefined);
    return old;
  }
}

const cell = (name: string, type = 'code'): CellStub => ({ name, type });
const tick = () => new Promise<void>(resolve => setTimeout(resolve, 0));

function follow(nb: NotebookStub) {
  const log: string[] = [];
  const follower = new CellFollower<CellStub>(
    nb,
    c => c.type !== 'raw',
    c => {
      log.push(`+${c.name}`);
      return () => log.push(`-${c.name}`);
    }
  );
  return { follower, log };
}

describe('CellFollower', () => {
  it('tracks the accepted cells once the notebook has made their widgets (a microtask later)', async () => {
    const nb = new NotebookStub();
    nb.widgets = [cell('a'), cell('r', 'raw'), cell('m', 'markdown')];
    const { log } = follow(nb);
    expect(log).toEqual([]);
    await tick();
    expect(log).toEqual(['+a', '+m']);
  });

  it('tracks each cell once, new ones as they come, and releases the ones gone', async () => {
    const nb = new NotebookStub();
    const [a, b, c] = [cell('a'), cell('b'), cell('c')];
    nb.widgets = [a, b];
    const { log } = follow(nb);
    await tick();
    nb.set(c, a, b);
    await tick();
    nb.set(c, b);
    await tick();
    expect(log).toEqual(['+a', '+b', '+c', '-a']);
  });

  it('handles a burst of changes once', async () => {
    const nb = new NotebookStub();
    let syncs = 0;
    const { follower } = follow(nb);
    const sync = follower.sync.bind(follower);
    follower.sync = () => {
      syncs++;
      sync();
    };
    await tick();
    syncs = 0;
    for (let i = 0; i < 5; i++) {
      nb.set(...nb.widgets, cell(`n${i}`));
    }
    await tick();
    expect(syncs).toBe(1);
  });

  it("follows the notebook's new model and no longer the old one's cells", async () => {
    const nb = new NotebookStub();
    nb.widgets = [cell('a')];
    const { follower, log } = follow(nb);
    await tick();
    const old = nb.swapModel();
    nb.widgets = [cell('b')];
    await tick();
    expect(log).toEqual(['+a', '+b', '-a']);
    let syncs = 0;
    follower.sync = () => void syncs++;
    old.changed.emit(undefined);
    await tick();
    expect(syncs).toBe(0);
    nb.set(cell('c'));
    await tick();
    expect(syncs).toBe(1);
  });

  it('releases every cell on dispose, once, and tracks nothing after', async () => {
    const nb = new NotebookStub();
    nb.widgets = [cell('a'), cell('b')];
    const { follower, log } = follow(nb);
    await tick();
    follower.dispose();
    follower.dispose();
    expect(follower.isDisposed).toBe(true);
    nb.set(cell('c'));
    nb.swapModel();
    follower.sync();
    await tick();
    expect(log).toEqual(['+a', '+b', '-a', '-b']);
  });

  it('waits for a model when the notebook has none yet', async () => {
    const nb = new NotebookStub();
    nb.model = null;
    const { log } = follow(nb);
    await tick();
    expect(log).toEqual([]);
    nb.model = { cells: new CellsStub() };
    nb.widgets = [cell('a')];
    nb.modelChanged.emit(undefined);
    await tick();
    expect(log).toEqual(['+a']);
  });
});
