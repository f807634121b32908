/**
 * The eye and the pin of one cell, as DOM (plain DOM: unit-tested in jsdom): two toggle buttons with
 * `aria-pressed`, constant names ("Hide from the model", "Pin in the model's context") and a tooltip
 * that says what "on" means. `cellmarks.ts` puts one in every cell.
 */

import { BoopTag, HIDE_TAG, IMetadataHolder, PIN_TAG, setTag, tagList } from './tags';

export const HIDE_LABEL = 'Hide from the model';
export const PIN_LABEL = "Pin in the model's context";

/** The icons a control draws (LabIcon elements in the notebook; anything in tests). */
export interface IMarkIcons {
  hideOff: () => HTMLElement;
  hideOn: () => HTMLElement;
  pin: () => HTMLElement;
}

interface IMarkSpec {
  tag: BoopTag;
  name: 'hide' | 'pin';
  label: string;
  /** The tooltip while on. */
  onTitle: string;
  off: keyof IMarkIcons;
  on: keyof IMarkIcons;
}

const MARKS: IMarkSpec[] = [
  {
    tag: HIDE_TAG,
    name: 'hide',
    label: HIDE_LABEL,
    onTitle: 'Hidden from the model: never sent, and no tool reads it (click to show it to the model again)',
    off: 'hideOff',
    on: 'hideOn'
  },
  {
    tag: PIN_TAG,
    name: 'pin',
    label: PIN_LABEL,
    onTitle: "Pinned in the model's context: never dropped to fit the window (click to unpin)",
    off: 'pin',
    on: 'pin'
  }
];

/** The two toggles of one cell, as DOM (no Jupyter widgets: unit-tested in jsdom). */
export class MarksControl {
  constructor(onToggle: (tag: BoopTag) => void, icons: IMarkIcons) {
    const node = (this.node = document.createElement('div'));
    node.className = 'boop-CellMarks';
    node.setAttribute('role', 'group');
    node.setAttribute('aria-label', 'boopiter: what the model sees of this cell');
    node.dataset.lmSuppressShortcuts = 'true'; // Enter and Space press the button, not a notebook shortcut
    for (const spec of MARKS) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'boop-CellMark';
      b.dataset.boopMark = spec.name;
      b.setAttribute('aria-label', spec.label);
      b.setAttribute('aria-pressed', 'false');
      b.title = spec.label;
      const off = icons[spec.off]();
      off.classList.add('boop-CellMark-off');
      const on = spec.on === spec.off ? null : icons[spec.on]();
      on?.classList.add('boop-CellMark-on');
      for (const icon of [off, on]) {
        icon?.setAttribute('aria-hidden', 'true');
      }
      b.append(...[off, on].filter((e): e is HTMLElement => e !== null));
      // a click leaves the focus where it was (the editor the user types in) and the selection as it was
      b.addEventListener('mousedown', e => {
        e.preventDefault();
        e.stopPropagation();
      });
      b.addEventListener('click', e => {
        e.preventDefault();
        e.stopPropagation();
        onToggle(spec.tag);
      });
      node.append(b);
      this._buttons.set(spec.tag, { button: b, spec, on });
    }
    this.update([]);
  }

  readonly node: HTMLDivElement;

  /** Show the state `tags` (the cell's `metadata.tags`) hold. */
  update(tags: readonly string[]): void {
    for (const [tag, { button, spec, on }] of this._buttons) {
      const pressed = tags.includes(tag);
      button.setAttribute('aria-pressed', String(pressed));
      button.title = pressed ? spec.onTitle : spec.label;
      if (on) {
        on.hidden = !pressed;
        (button.firstElementChild as HTMLElement).hidden = pressed;
      }
    }
  }

  private _buttons = new Map<BoopTag, { button: HTMLButtonElement; spec: IMarkSpec; on: HTMLElement | null }>();
}

/** Flip one tag of one cell (through its metadata API: marks the notebook dirty). */
export function flipTag(cell: IMetadataHolder, tag: BoopTag): void {
  setTag(cell, tag, !tagList(cell.getMetadata('tags')).includes(tag));
}

/** What `oneUndoStep` needs of the shared notebook (`INotebookModel.sharedModel` has it). */
export interface IUndoableNotebook {
  transact(f: () => void, undoable?: boolean): void;
  readonly undoManager?: { stopCapturing(): void } | null;
}

/**
 * Run `f` (cell changes) as one step of the notebook's own undo (Z in command mode, Edit > Undo): a cell's
 * metadata changed alone would land only in that cell's editor history.
 */
export function oneUndoStep(notebook: IUndoableNotebook | null | undefined, f: () => void): void {
  if (!notebook) {
    f();
    return;
  }
  notebook.undoManager?.stopCapturing();
  notebook.transact(f, true);
  notebook.undoManager?.stopCapturing();
}

