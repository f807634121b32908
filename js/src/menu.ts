/**
 * The brain menu: a compact notebook toolbar button (which model answers, ⚠ when a source is offline)
 * that opens a popup panel with every pick boopiter offers. Each pick is a `pick` message; the
 * kernel answers with its new state and the binding, which the channel saves in the notebook.
 * Opening the panel while a source is offline lists the models again, so a server that came back shows.
 *
 * Keyboard: the button opens the panel and focuses it; Tab and Shift+Tab cycle inside it, arrow keys
 * move between controls (and within the model list and the effort group), Escape closes it and
 * returns to the button. Every on/off state is an `aria-pressed`/`aria-checked` with a check mark.
 */

import { Widget } from '@lumino/widgets';
import { BoopChannel } from './channel';
import { brainIcon } from './icons';
import { ChannelState, effectiveSettings } from './channelstate';
import { buttonLabel, capabilities, contextLabel, humanSize, modelDescription, offlineLines, statusLine, toolsSetting } from './labels';
import { BindingChanges, MenuSettings, MenuState, ModelEntry } from './protocol';
import { el } from './dom';

let ids = 0;


function hidden(e: HTMLElement): HTMLElement {
  e.setAttribute('aria-hidden', 'true');
  return e;
}

/** The toolbar item: a button that shows who answers and opens the panel. */
export class BrainMenuButton extends Widget {
  constructor(channel: BoopChannel) {
    super();
    this._channel = channel;
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

  toggle(): void {
    if (this._panel) {
      this.close(true);
    } else {
      this.open();
    }
  }

  open(): void {
    if (this._panel || this.isDisposed) {
      return;
    }
    this._panel = new BrainMenuPanel(this._channel, this._button, this._panelId, restore => this.close(restore));
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
  private _button: HTMLButtonElement;
  private _label: HTMLElement;
  private _warn: HTMLElement;
  private _panel: BrainMenuPanel | null = null;
  private _panelId: string;
}

const FOCUSABLE = 'button:not([disabled]), select:not([disabled]), input:not([disabled]), [tabindex="0"]';

/** The popup: built again from the channel's state on every change, focus kept on the same control. */
export class BrainMenuPanel extends Widget {
  constructor(channel: BoopChannel, anchor: HTMLElement, id: string, onClose: (restoreFocus: boolean) => void) {
    super();
    this._channel = channel;
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
        const load = this._button('load', 'Load boopiter', 'Run %load_ext boopiter_ext in the kernel (silently)', 'boop-Menu-primary');
        const out: HTMLElement[] = [head, msg, load];
        if (s.error) {
          const err = el('p', 'boop-Menu-error', `⚠ ${s.error}`);
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
      status.append(el('div', 'boop-Menu-offline', `⚠ offline · ${line}`));
    }
    if (s.pending.length) {
      status.append(el('div', 'boop-Menu-pending', 'Waiting for the kernel…'));
    }
    const out: HTMLElement[] = [status];
    if (s.error) {
      const err = el('div', 'boop-Menu-error', `⚠ ${s.error}`);
      err.setAttribute('role', 'alert');
      out.push(err);
    }
    out.push(this._models(menu, set), this._reasoning(menu, set), this._memory(menu, set), this._tools(menu, set));
    const footer = el('div', 'boop-Menu-footer');
    footer.append(
      this._toggle('reuse', 'Reuse saved replies', set.reuse,
        'Show the saved reply again when a prompt asks exactly what it asked before (off: every prompt asks the model)'),
      this._button('refresh', '⟳ Refresh', 'List the models again')
    );
    out.push(footer);
    return out;
  }

  private _section(label: string): [HTMLElement, string] {
    const id = `${this.id}-${label.toLowerCase().replace(/\W+/g, '-')}`;
    const section = el('div', 'boop-Menu-section');
    const l = el('div', 'boop-Menu-label', label);
    l.id = id;
    section.append(l);
    return [section, id];
  }

  private _models(menu: MenuState, set: MenuSettings): HTMLElement {
    const [section, labelId] = this._section('Model');
    const list = el('ul', 'boop-Menu-models');
    list.setAttribute('role', 'listbox');
    list.setAttribute('aria-labelledby', labelId);
    const entries: (ModelEntry | null)[] = [null, ...menu.models];
    if (set.model && !menu.models.some(m => m.id === set.model)) {
      entries.push({ id: set.model, label: `${set.model} · not listed`, source: 'declared', capabilities: [] });
    }
    for (const entry of entries) {
      const value = entry?.id ?? '';
      const selected = value === set.model;
      const li = el('li', 'boop-Menu-model');
      li.setAttribute('role', 'option');
      li.setAttribute('aria-selected', String(selected));
      li.tabIndex = selected ? 0 : -1;
      li.dataset.key = `model:${value}`;
      li.dataset.model = value;
      li.append(hidden(el('span', 'boop-Menu-check', selected ? '✓' : '')));
      if (!entry) {
        li.append(el('span', 'boop-Menu-modelName', 'Default'), el('span', 'boop-Menu-modelMeta', 'settings, else chosen automatically'));
        li.setAttribute('aria-label', 'Default: settings, else chosen automatically');
      } else {
        li.append(el('span', 'boop-Menu-modelName', entry.label));
        const caps = el('span', 'boop-Menu-caps');
        for (const c of capabilities(entry)) {
          const badge = el('span', 'boop-Menu-cap', c.icon);
          badge.title = c.name;
          caps.append(badge);
        }
        li.append(caps, el('span', 'boop-Menu-modelMeta', [humanSize(entry.size), entry.source].filter(Boolean).join(' · ')));
        if (entry.offline) {
          li.classList.add('boop-mod-offline');
          li.append(el('span', 'boop-Menu-offlineMark', '⚠ offline'));
          li.title = `offline: ${entry.offline}`;
        } else if (entry.note) {
          li.title = entry.note;
        }
        li.setAttribute('aria-label', modelDescription(entry));
      }
      list.append(li);
    }
    if (!list.querySelector('[tabindex="0"]')) {
      (list.firstElementChild as HTMLElement).tabIndex = 0;
    }
    section.append(list);
    return section;
  }

  private _reasoning(menu: MenuState, set: MenuSettings): HTMLElement {
    const [section] = this._section('Reasoning');
    const thinkers = menu.models.filter(m => m.capabilities.includes('thinking'));
    const none = !thinkers.length && !set.reasoning_model;
    const row = el('div', 'boop-Menu-row');
    const toggle = this._toggle('reasoning', 'Use reasoning model', set.reasoning, 'Answer with the reasoning model instead of the standard one');
    const options: [string, string][] = [['no reasoning model', ''], ...thinkers.map(m => [m.label, m.id] as [string, string])];
    if (set.reasoning_model && !thinkers.some(m => m.id === set.reasoning_model)) {
      options.push([`${set.reasoning_model} · not listed`, set.reasoning_model]);
    }
    const select = this._select('reasoning_model', 'model', options, set.reasoning_model, 'The model that answers when reasoning is on');
    row.append(toggle, select);
    const effort = el('div', 'boop-Menu-effort');
    effort.setAttribute('role', 'radiogroup');
    effort.setAttribute('aria-label', 'Reasoning effort');
    const efforts = menu.options.efforts.length ? menu.options.efforts : [['auto', ''], ['L', 'l'], ['M', 'm'], ['H', 'h']];
    const current = ['l', 'm', 'h', 'off'].includes(set.think) ? set.think : '';
    const names: { [k: string]: string } = { '': "the model's default effort", l: 'low effort', m: 'medium effort', h: 'high effort', off: 'no reasoning' };
    for (const [label, value] of efforts) {
      const b = el('button', 'boop-Menu-chip');
      b.type = 'button';
      b.setAttribute('role', 'radio');
      const on = value === current;
      b.setAttribute('aria-checked', String(on));
      b.setAttribute('aria-label', `effort ${label}: ${names[value] ?? value}`);
      b.title = names[value] ?? value;
      b.tabIndex = on ? 0 : -1;
      b.dataset.key = `think:${value}`;
      b.dataset.think = value;
      b.append(hidden(el('span', 'boop-Menu-mark', on ? '✓' : '')), el('span', '', label));
      b.disabled = none;
      effort.append(b);
    }
    select.querySelector('select')!.disabled = none;
    (toggle as HTMLButtonElement).disabled = none && !set.reasoning;
    const effortRow = el('div', 'boop-Menu-row');
    effortRow.append(el('span', 'boop-Menu-inlineLabel', 'effort'), effort);
    section.append(row, effortRow);
    return section;
  }

  private _memory(menu: MenuState, set: MenuSettings): HTMLElement {
    const [section] = this._section('Memory');
    const keep: [string, string][] = menu.options.keep_alive.length ? [...menu.options.keep_alive] : [['default', '']];
    if (!keep.some(([, v]) => v === set.keep_alive)) {
      keep.push([`${set.keep_alive} · not listed`, set.keep_alive]);
    }
    const cap = menu.answering.context_length;
    const sizes = [0, ...menu.options.context_sizes.filter(n => n && (!cap || n <= cap))];
    if (!sizes.includes(set.context_size)) {
      sizes.push(set.context_size);
    }
    const row = el('div', 'boop-Menu-row');
    row.append(
      this._select('keep_alive', 'keep', keep, set.keep_alive, 'How long the server keeps the model in memory after a reply'),
      this._select('context_size', 'context', sizes.map(n => [contextLabel(n), String(n)] as [string, string]), String(set.context_size),
        'Context window (num_ctx); auto sizes it to each prompt')
    );
    section.append(row);
    return section;
  }

  private _tools(menu: MenuState, set: MenuSettings): HTMLElement {
    const [section] = this._section('Tools');
    const row = el('div', 'boop-Menu-row');
    const chosen = set.tools ? new Set(set.tools.split(',').map(t => t.trim()).filter(Boolean)) : null;
    for (const t of menu.options.tool_sources) {
      const on = chosen ? chosen.has(t.name) : t.on;
      const label = el('label', 'boop-Menu-check-label');
      const box = el('input');
      box.type = 'checkbox';
      box.checked = on;
      box.dataset.key = `tool:${t.name}`;
      box.dataset.tool = t.name;
      label.title = t.description;
      label.append(box, el('span', '', t.name));
      row.append(label);
    }
    row.append(this._toggle('auto', 'Auto-run', set.auto, 'Run guarded tool calls by themselves (off: each call waits for Run)'));
    section.append(row);
    if (menu.offered_tools.length) {
      section.append(el('div', 'boop-Menu-hint', `offered: ${menu.offered_tools.join(', ')}`));
    }
    return section;
  }

  // -- controls

  private _button(key: string, text: string, title: string, extra = ''): HTMLElement {
    const b = el('button', `boop-Menu-button jp-mod-styled ${extra}`.trim(), text);
    b.type = 'button';
    b.title = title;
    b.dataset.key = key;
    b.dataset.action = key;
    return b;
  }

  private _toggle(key: string, text: string, on: boolean, title: string): HTMLElement {
    const b = el('button', 'boop-Menu-toggle');
    b.type = 'button';
    b.setAttribute('aria-pressed', String(on));
    b.title = title;
    b.dataset.key = key;
    b.dataset.toggle = key;
    b.append(hidden(el('span', 'boop-Menu-mark', on ? '✓' : '')), el('span', '', text));
    return b;
  }

  private _select(key: string, label: string, options: [string, string][], value: string, title = ''): HTMLElement {
    const wrap = el('label', 'boop-Menu-select');
    if (title) {
      wrap.title = title;
    }
    const select = el('select');
    select.setAttribute('aria-label', title ? `${label}: ${title}` : label);
    select.dataset.key = key;
    select.dataset.pick = key;
    for (const [text, v] of options) {
      const o = el('option', '', text);
      o.value = v;
      o.selected = v === value;
      select.append(o);
    }
    wrap.append(el('span', 'boop-Menu-inlineLabel', label), select);
    return wrap;
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
      this._channel.markUsed();
      void this._channel.load();
    } else if (t.dataset.action === 'refresh') {
      this._channel.refresh();
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
  private _anchor: HTMLElement;
  private _onClose: (restoreFocus: boolean) => void;
}
