/**
 * The brain menu's popup panel: built again from the channel's state on every change (the sections in
 * `sections.ts`), focus kept on the same control. Each pick is a `pick` message on the channel.
 *
 * Keyboard: Tab and Shift+Tab cycle inside it, arrow keys move between controls (and within the model list and the
 * effort group), Escape closes it and returns to the button.
 */

import { Widget } from '@lumino/widgets';
import { BoopChannel } from '../channel/channel';
import { ChannelState, effectiveSettings } from '../channel/state';
import { el } from '../dom';
import { brainIcon } from '../icons';
import { BindingChanges, MenuSettings, MenuState } from '../protocol/messages';
import { actionButton, hidden } from './controls';
import { appendInline } from './inline';
import { offlineLines, statusLine, toolsSetting } from './labels';
import {
  consentSection,
  loadCellSection,
  memorySection,
  modelSection,
  reasoningSection,
  repliesSection,
  toolsSection,
  completionsSection
} from './sections';

const FOCUSABLE = 'button:not([disabled]), select:not([disabled]), input:not([disabled]), [tabindex="0"]';

/** What the menu does to its notebook. */
export interface IMenuNotebook {
  /** Load boopiter: the notebook's load cell put in (once) and run. */
  load(): void;
  /** Whether the notebook has prompt cells and no load cell above them. */
  needsLoadCell(): boolean;
  /** Put the load cell in, above the first prompt cell. */
  addLoadCell(): void;
  /** Insert an agent prompt cell (`%%prompt --agent`) below the active cell. */
  insertAgent(): void;
}

/** A line of the kernel's (its little Markdown drawn as text and code: `inline.ts`), with a warning sign. */
function warning(cls: string, text: string): HTMLElement {
  const line = el('div', cls, '⚠ ');
  appendInline(line, text);
  return line;
}

/** The popup: built again from the channel's state on every change, focus kept on the same control. */
export class BrainMenuPanel extends Widget {
  constructor(
    channel: BoopChannel,
    notebook: IMenuNotebook,
    anchor: HTMLElement,
    id: string,
    onClose: (restoreFocus: boolean) => void
  ) {
    super();
    this._channel = channel;
    this._notebook = notebook;
    this._anchor = anchor;
    this._onClose = onClose;
    this.id = id;
    this.addClass('boop-MenuPanel');
    this.node.setAttribute('role', 'dialog');
    this.node.setAttribute('aria-label', 'boopiter: models and settings');
    // keys typed here are for the panel, not the notebook's shortcuts
    this.node.dataset.lmSuppressShortcuts = 'true';
    this.node.addEventListener('keydown', this._onKey);
    this.node.addEventListener('click', this._onClick);
    this.node.addEventListener('change', this._onChange);
    document.addEventListener('pointerdown', this._onOutside, true);
    window.addEventListener('resize', this._onResize);
    this.render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    document.removeEventListener('pointerdown', this._onOutside, true);
    window.removeEventListener('resize', this._onResize);
    super.dispose();
  }

  /** Under the button, inside the window (a 1024 px window included). */
  place(): void {
    const r = this._anchor.getBoundingClientRect();
    const width = Math.min(440, window.innerWidth - 16);
    const left = Math.max(8, Math.min(r.left, window.innerWidth - width - 8));
    const top = Math.min(r.bottom + 4, window.innerHeight - 120);
    const style = this.node.style;
    style.width = `${width}px`;
    style.left = `${left}px`;
    style.top = `${top}px`;
    style.maxHeight = `${Math.max(120, window.innerHeight - top - 8)}px`;
  }

  focusFirst(): void {
    const target =
      (this.node.querySelector('[role="option"][tabindex="0"]') as HTMLElement | null) ??
      (this.node.querySelector(FOCUSABLE) as HTMLElement | null);
    (target ?? this.node).focus();
  }

  render(): void {
    const active = document.activeElement as HTMLElement | null;
    const hadFocus = !!active && this.node.contains(active);
    const key = hadFocus ? active!.dataset.key : undefined;
    const list = this.node.querySelector('.boop-Menu-models');
    const listScroll = list?.scrollTop ?? 0;
    const panelScroll = this.node.scrollTop;
    this.node.replaceChildren(...this._content(this._channel.state));
    this.node.tabIndex = -1;
    const newList = this.node.querySelector('.boop-Menu-models');
    if (newList) {
      newList.scrollTop = listScroll;
    }
    this.node.scrollTop = panelScroll;
    if (hadFocus) {
      const same = key ? (this.node.querySelector(`[data-key="${CSS.escape(key)}"]`) as HTMLElement | null) : null;
      if (same) {
        same.focus();
      } else {
        this.focusFirst();
      }
    }
  }

  // -- content

  private _content(s: ChannelState): HTMLElement[] {
    const head = el('div', 'boop-Menu-title');
    head.append(hidden(brainIcon.element({ tag: 'span', className: 'boop-Menu-titleIcon' })), el('span', '', 'boopiter'));
    switch (s.phase) {
      case 'nokernel':
        return [head, el('p', 'boop-Menu-message', 'No kernel: start one to use prompt cells.')];
      case 'unsupported':
        return [head, el('p', 'boop-Menu-message', `boopiter needs an IPython kernel; this one runs ${s.language || 'another language'}.`)];
      case 'connecting':
        return [head, el('p', 'boop-Menu-message', 'Asking the kernel…')];
      case 'loading':
        return [head, el('p', 'boop-Menu-message', 'Loading boopiter in the kernel…')];
      case 'absent': {
        const msg = el('p', 'boop-Menu-message', 'boopiter is not loaded in this kernel.');
        const load = actionButton('load', 'Load boopiter', 'Put a %load_ext boopiter_ext cell at the top of the notebook and run it', 'boop-Menu-primary');
        const out: HTMLElement[] = [head, msg, load];
        if (s.error) {
          const err = warning('boop-Menu-error', s.error);
          err.setAttribute('role', 'alert');
          out.push(err);
        }
        out.push(
          el(
            'p',
            'boop-Menu-hint',
            'Notebooks that used boopiter load it by themselves; c.InteractiveShellApp.extensions in ipython_config.py loads it in every kernel.'
          )
        );
        return out;
      }
      case 'ready':
        return [head, ...this._menu(s, s.menu!, effectiveSettings(s)!)];
    }
  }

  private _menu(s: ChannelState, menu: MenuState, set: MenuSettings): HTMLElement[] {
    const status = el('div', 'boop-Menu-status');
    status.setAttribute('role', 'status');
    status.setAttribute('aria-live', 'polite');
    status.append(el('div', 'boop-Menu-answering', statusLine(menu)));
    for (const line of offlineLines(menu)) {
      status.append(warning('boop-Menu-offline', `offline · ${line}`));
    }
    if (s.pending.length) {
      status.append(el('div', 'boop-Menu-pending', 'Waiting for the kernel…'));
    }
    const out: HTMLElement[] = [status];
    const consent = consentSection(menu);
    if (consent) {
      out.push(consent);
    }
    const loadCell = loadCellSection(this._notebook.needsLoadCell());
    if (loadCell) {
      out.push(loadCell);
    }
    if (s.error) {
      const err = warning('boop-Menu-error', s.error);
      err.setAttribute('role', 'alert');
      out.push(err);
    }
    out.push(
      modelSection(this.id, menu, set),
      reasoningSection(this.id, menu, set),
      memorySection(this.id, menu, set),
      toolsSection(this.id, menu, set),
      completionsSection(this.id, menu, set),
      repliesSection(this.id, set)
    );
    const footer = el('div', 'boop-Menu-footer');
    footer.append(
      actionButton('refresh', '⟳ Refresh', 'List the models again'),
      actionButton('agent', '+ Agent prompt', "Insert a %%prompt --agent cell below: the model's code runs as cells below it, each on your click")
    );
    out.push(footer);
    return out;
  }

  // -- picks

  private _pick(changes: BindingChanges): void {
    this._channel.pick(changes);
  }

  private _onClick = (e: MouseEvent): void => {
    const t = (e.target as HTMLElement).closest('[data-action], [data-toggle], [data-model], [data-think]') as HTMLElement | null;
    if (!t || (t as HTMLButtonElement).disabled) {
      return;
    }
    const set = effectiveSettings(this._channel.state);
    if (t.dataset.action === 'load') {
      this._notebook.load();
    } else if (t.dataset.action === 'add-load-cell') {
      this._notebook.addLoadCell();
      this.render();
    } else if (t.dataset.action === 'refresh') {
      this._channel.refresh();
    } else if (t.dataset.action === 'agent') {
      this._notebook.insertAgent();
    } else if (t.dataset.action === 'allow') {
      const proposed = this._channel.state.menu?.consent.proposed ?? [];
      if (proposed.length) {
        this._channel.allow(proposed);
      }
    } else if (t.dataset.toggle && set) {
      const key = t.dataset.toggle as 'reasoning' | 'auto' | 'reuse';
      this._pick({ [key]: !set[key] });
    } else if (t.dataset.model !== undefined && set) {
      t.focus();
      if (t.dataset.model !== set.model) {
        this._pick({ model: t.dataset.model || null });
      }
    } else if (t.dataset.think !== undefined && set) {
      t.focus();
      if (t.dataset.think !== set.think) {
        this._pick({ think: (t.dataset.think || null) as BindingChanges['think'] });
      }
    }
  };

  private _onChange = (e: Event): void => {
    const t = e.target as HTMLElement;
    const state = this._channel.state;
    if (t instanceof HTMLSelectElement && t.dataset.pick) {
      const v = t.value;
      switch (t.dataset.pick) {
        case 'reasoning_model':
          this._pick({ reasoning_model: v || null });
          break;
        case 'keep_alive':
          this._pick({ keep_alive: v || null });
          break;
        case 'context_size':
          this._pick({ context_size: Number(v) || null });
          break;
        case 'completion_model':
          this._pick({ completion_model: v || null });
          break;
      }
    } else if (t instanceof HTMLInputElement && t.dataset.tool && state.menu) {
      const boxes = Array.from(this.node.querySelectorAll('input[data-tool]')) as HTMLInputElement[];
      this._pick({ tools: toolsSetting(boxes.map(b => ({ name: b.dataset.tool!, on: b.checked }))) });
    }
  };

  // -- keyboard

  private _onKey = (e: KeyboardEvent): void => {
    const t = e.target as HTMLElement;
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      this._onClose(true);
      return;
    }
    if (e.key === 'Tab') {
      const all = this._focusables();
      if (!all.length) {
        return;
      }
      const i = all.indexOf(t);
      const next = e.shiftKey ? (i <= 0 ? all.length - 1 : i - 1) : i === all.length - 1 ? 0 : i + 1;
      e.preventDefault();
      all[next].focus();
      return;
    }
    if (t.getAttribute('role') === 'option') {
      this._listKey(e, t);
      return;
    }
    if (t.getAttribute('role') === 'radio') {
      this._radioKey(e, t);
      return;
    }
    if (t instanceof HTMLSelectElement) {
      return; // arrows change the value, as in any select
    }
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      const all = this._focusables();
      const i = all.indexOf(t);
      const next = all[e.key === 'ArrowDown' ? Math.min(all.length - 1, i + 1) : Math.max(0, i - 1)];
      if (next) {
        e.preventDefault();
        next.focus();
      }
    }
  };

  private _listKey(e: KeyboardEvent, t: HTMLElement): void {
    const options = Array.from(t.parentElement!.querySelectorAll('[role="option"]')) as HTMLElement[];
    const i = options.indexOf(t);
    let j = -1;
    switch (e.key) {
      case 'ArrowDown':
        j = Math.min(options.length - 1, i + 1);
        break;
      case 'ArrowUp':
        j = Math.max(0, i - 1);
        break;
      case 'Home':
        j = 0;
        break;
      case 'End':
        j = options.length - 1;
        break;
      case 'Enter':
      case ' ':
        e.preventDefault();
        t.click();
        return;
      default:
        return;
    }
    e.preventDefault();
    options.forEach((o, k) => (o.tabIndex = k === j ? 0 : -1));
    options[j].focus();
    options[j].scrollIntoView({ block: 'nearest' });
  }

  private _radioKey(e: KeyboardEvent, t: HTMLElement): void {
    const radios = Array.from(t.parentElement!.querySelectorAll('[role="radio"]')) as HTMLButtonElement[];
    const i = radios.indexOf(t as HTMLButtonElement);
    const step = e.key === 'ArrowRight' || e.key === 'ArrowDown' ? 1 : e.key === 'ArrowLeft' || e.key === 'ArrowUp' ? -1 : 0;
    if (!step) {
      return;
    }
    e.preventDefault();
    const next = radios[(i + step + radios.length) % radios.length];
    radios.forEach(r => (r.tabIndex = r === next ? 0 : -1));
    next.focus();
    next.click();
  }

  /** What Tab reaches: one stop per list and radio group (its current item), then every other control. */
  private _focusables(): HTMLElement[] {
    return (Array.from(this.node.querySelectorAll(FOCUSABLE)) as HTMLElement[]).filter(
      e => e.tabIndex >= 0 && !e.closest('[hidden]') && e.offsetParent !== null
    );
  }

  private _onOutside = (e: PointerEvent): void => {
    const t = e.target as Node;
    if (!this.node.contains(t) && !this._anchor.contains(t)) {
      this._onClose(false);
    }
  };

  private _onResize = (): void => {
    this.place();
  };

  private _channel: BoopChannel;
  private _notebook: IMenuNotebook;
  private _anchor: HTMLElement;
  private _onClose: (restoreFocus: boolean) => void;
}
