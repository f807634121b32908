/**
 * The brain menu: a compact notebook toolbar button (which model answers, ⚠ when a source is offline)
 * that opens a popup panel with every pick boopiter offers. Each pick is a `pick` message; the
 * kernel answers with its new state and the binding, which the channel saves in the notebook.
 * Opening the panel while a source is offline lists the models again, so a server that came back shows. While
 * boopiter is not loaded, a click loads it (the notebook's own load cell, put in and run) and opens the panel.
 *
 * Keyboard: the button opens the panel and focuses it; Tab and Shift+Tab cycle inside it, arrow keys
 * move between controls (and within the model list and the effort group), Escape closes it and
 * returns to the button. Every on/off state is an `aria-pressed`/`aria-checked` with a check mark.
 */

import { Widget } from '@lumino/widgets';
import { BoopChannel } from '../channel/channel';
import { el } from '../dom';
import { brainIcon } from '../icons';
import { hidden } from './controls';
import { buttonLabel } from './labels';
import { BrainMenuPanel, IMenuNotebook } from './panel';

let ids = 0;

/** The toolbar item: a button that shows who answers and opens the panel. */
export class BrainMenuButton extends Widget {
  constructor(channel: BoopChannel, notebook: IMenuNotebook) {
    super();
    this._channel = channel;
    this._notebook = notebook;
    this._panelId = `boop-menu-${++ids}`;
    this.addClass('boop-MenuItem');
    const b = (this._button = el('button', 'jp-ToolbarButtonComponent jp-Button jp-mod-minimal boop-MenuButton'));
    b.type = 'button';
    b.setAttribute('aria-haspopup', 'dialog');
    b.setAttribute('aria-expanded', 'false');
    b.setAttribute('aria-controls', this._panelId);
    this._label = el('span', 'boop-MenuButton-label');
    this._warn = hidden(el('span', 'boop-MenuButton-warn', '⚠'));
    b.append(hidden(brainIcon.element({ tag: 'span', className: 'boop-MenuButton-icon' })), this._label, this._warn);
    b.addEventListener('click', () => this.toggle());
    this.node.append(b);
    channel.stateChanged.connect(this._update, this);
    this._update();
  }

  get isOpen(): boolean {
    return this._panel !== null;
  }

  /** A click: open or close the panel; while boopiter is not loaded, load it too (one click, "Load boopiter"). */
  toggle(): void {
    if (this._panel) {
      this.close(true);
      return;
    }
    if (this._channel.state.phase === 'absent') {
      this._notebook.load();
    }
    this.open();
  }

  open(): void {
    if (this._panel || this.isDisposed) {
      return;
    }
    this._panel = new BrainMenuPanel(this._channel, this._notebook, this._button, this._panelId, restore => this.close(restore));
    Widget.attach(this._panel, document.body);
    this._panel.place();
    this._panel.focusFirst();
    this._button.setAttribute('aria-expanded', 'true');
    const { phase, menu } = this._channel.state;
    if (phase === 'ready' && menu && Object.keys(menu.problems).length) {
      this._channel.refresh(); // a source was offline at the last listing: it may be back
    }
  }

  close(restoreFocus = false): void {
    const panel = this._panel;
    if (!panel) {
      return;
    }
    this._panel = null;
    panel.dispose();
    this._button.setAttribute('aria-expanded', 'false');
    if (restoreFocus && this._button.isConnected) {
      this._button.focus();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.close();
    this._channel.stateChanged.disconnect(this._update, this);
    super.dispose();
  }

  protected onBeforeHide(): void {
    this.close();
  }

  protected onBeforeDetach(): void {
    this.close();
  }

  private _update(): void {
    const s = this._channel.state;
    const label = buttonLabel(s);
    this._label.textContent = label.text;
    this._button.title = label.title;
    this._button.setAttribute('aria-label', `boopiter: ${label.text}${label.warn ? ' (warning)' : ''}; open the brain menu`);
    this._warn.hidden = !label.warn;
    this.node.dataset.phase = s.phase;
    this.toggleClass('boop-mod-idle', label.idle);
    this.toggleClass('boop-mod-warn', label.warn);
    // nothing to offer a kernel that is not IPython: the item steps aside
    this.toggleClass('boop-mod-unsupported', s.phase === 'unsupported');
    this._panel?.render();
  }

  private _channel: BoopChannel;
  private _notebook: IMenuNotebook;
  private _button: HTMLButtonElement;
  private _label: HTMLElement;
  private _warn: HTMLElement;
  private _panel: BrainMenuPanel | null = null;
  private _panelId: string;
}
