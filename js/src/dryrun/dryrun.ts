/**
 * A prompt cell's dry run, in a dialog: what the prompt would send, and to which model (tokens, the
 * context ledger, every message). The kernel builds it (`{type: 'preview'}`); nothing goes to a model.
 * Its Markdown is model-adjacent text from the kernel: rendered with `trusted: false`, through the
 * notebook's sanitizer. The dialog scrolls, and Escape or Close closes it.
 */

import type { IPreview } from '../protocol/messages';

export const DRY_RUN_CLASS = 'boop-DryRun';

export interface IDryRunOptions {
  /** Render untrusted Markdown into `host` (the notebook's renderMarkdown, `trusted: false`). */
  renderMarkdown: (host: HTMLElement, source: string) => Promise<void>;
  /** Copy text to the clipboard. */
  copy?: (text: string) => void;
  /**
   * Show every message open (the dialog, which scrolls on its own); else each stays folded, as the kernel's Markdown
   * has it (a dry run in a cell: a list to open, not a wall of text).
   */
  expand?: boolean;
}

/** The dialog's body: "building…", then the dry run or why there is none (plain DOM: unit-tested in jsdom). */
export class DryRunBody {
  constructor(options: IDryRunOptions) {
    this._options = options;
    this.node = document.createElement('div');
    this.node.className = DRY_RUN_CLASS;
    this.node.dataset.state = 'loading';
    this.node.setAttribute('aria-live', 'polite');
    this.node.tabIndex = 0; // scrollable with the keyboard
    const status = (this._status = document.createElement('p'));
    status.className = 'boop-DryRun-status';
    status.textContent = 'Building the dry run in the kernel…';
    this.node.append(status);
  }

  readonly node: HTMLDivElement;

  /** Once the dialog is gone: nothing more is drawn. */
  dispose(): void {
    this._disposed = true;
  }

  /** Which stage it shows: loading, done or failed. */
  get state(): string {
    return this.node.dataset.state ?? '';
  }

  /** Show the kernel's answer. */
  async show(preview: IPreview): Promise<void> {
    if (this._disposed) {
      return;
    }
    const actions = document.createElement('div');
    actions.className = 'boop-DryRun-actions';
    if (this._options.copy && preview.text) {
      const copy = document.createElement('button');
      copy.type = 'button';
      copy.className = 'jp-Button jp-mod-styled jp-mod-reject boop-DryRun-copy';
      copy.textContent = 'Copy as text';
      copy.addEventListener('click', () => {
        this._options.copy!(preview.text);
        copy.textContent = 'Copied';
      });
      actions.append(copy);
    }
    const content = document.createElement('div');
    content.className = 'boop-DryRun-content';
    this._status.remove();
    this.node.replaceChildren(actions, content);
    try {
      if (preview.markdown) {
        await this._options.renderMarkdown(content, preview.markdown);
        if (this._options.expand) {
          // the first fold is the context ledger (a list of every cell): the messages come after it
          const folds = Array.from(content.querySelectorAll(':scope > details')) as HTMLDetailsElement[];
          folds.slice(1).forEach(d => (d.open = true));
        }
      } else {
        const pre = document.createElement('pre');
        pre.textContent = preview.text || '(the kernel sent an empty dry run)';
        content.append(pre);
      }
    } catch {
      const pre = document.createElement('pre');
      pre.textContent = preview.text;
      content.replaceChildren(pre);
    }
    this.node.dataset.state = 'done';
  }

  /** Say why there is no dry run. */
  fail(error: unknown): void {
    if (this._disposed) {
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    this._status.textContent = `No dry run: ${message}`;
    this._status.classList.add('boop-DryRun-error');
    this.node.replaceChildren(this._status);
    this.node.dataset.state = 'failed';
  }

  private _options: IDryRunOptions;
  private _status: HTMLElement;
  private _disposed = false;
}
