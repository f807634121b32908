/**
 * The DOM of a reply (`application/vnd.boopiter.reply+json`), updated in place as it streams.
 *
 * Plain DOM plus two injected functions (how to render one Markdown block, what the code actions
 * do), so it is unit-tested in jsdom. Each update keeps every element it can: the reasoning and
 * details sections (with their open/closed state), the blocks whose Markdown did not change, the
 * open/closed state of each tool call. Model text only ever enters as `textContent` or through
 * `renderMarkdown` (Jupyter's sanitizer, untrusted).
 */

import { Block, BlockTracker, mayRerender, openFenceBody } from './blocks';
import { StreamFollower } from './follow';
import { Badge, isLive, replyBadges, toolMark } from './labels';
import { ReplyBundle, ReplyData, ToolLoopData, ToolRoundData } from './protocol';
import { el } from './dom';

export interface IReplyHooks {
  /** Render one block of untrusted Markdown into `host` (Jupyter's `renderMarkdown`, `trusted: false`). */
  renderMarkdown(host: HTMLElement, source: string): Promise<void>;
  /** The code actions and the stop button; null outside a notebook (only Copy is offered). */
  actions(node: HTMLElement): IReplyActions | null;
  /** Copy to the clipboard. */
  copy(text: string): void;
  /** Typeset the math in `node` (Jupyter's latexTypesetter); blocks are typeset a chunk at a time. */
  typeset?(node: HTMLElement): void;
  /** The theme's icons for the buttons (text marks if not given). */
  icon?: IconFactory;
  now?: () => number;
}

export interface IReplyActions {
  /** Insert `code` in a new code cell below the prompt cell; run it with the notebook's own run if `run`. */
  insert(code: string, run: boolean): Promise<void>;
  /** Interrupt the kernel (the stop button). */
  stop(): Promise<void>;
}

/** Time (ms) the render loop may hold the main thread before it yields to the browser. */
export const SLICE_MS = 12;
/** Blocks per chunk: the unit of layout skipping (`content-visibility`) and of math typesetting. */
export const CHUNK = 32;
/** Sources that may hold math for the typesetter ($, \( or \[); others are not typeset at all. */
const MATH = /\$|\\\(|\\\[/;
/** While a reply streams, math is typeset at most this often (ms). */
export const MATH_MS = 400;

/** Languages that "Insert and run" runs; other tagged blocks (bash, json, text...) can be inserted or copied. */
const RUNNABLE = new Set(['', 'python', 'python3', 'py', 'ipython', 'ipython3']);

interface Parts {
  badges: HTMLElement;
  badgesKey: string;
  reasoning: HTMLDetailsElement;
  reasoningSummary: HTMLElement;
  reasoningText: HTMLElement;
  body: HTMLElement;
  note: HTMLElement;
  warning: HTMLElement;
  details: HTMLDetailsElement;
  detailsSummary: HTMLElement;
  detailsList: HTMLElement;
  detailsKey: string;
  live: HTMLElement;
  liveText: HTMLElement;
  elapsed: HTMLElement;
  stop: HTMLButtonElement;
  stopLabel: HTMLElement;
}

interface Slot {
  el: HTMLElement;
  chunk: HTMLElement;
  /** The block's Markdown as last asked for. */
  want: string;
  /** Render `want` as plain streaming code (an open fence of a reply still streaming). */
  fence: boolean;
  /** What the element shows now ('' before the first render), and how. */
  shown: string;
  shownFence: boolean;
  queued: boolean;
  gen: number;
  lastStart: number;
  lastCost: number;
  removed: boolean;
}


function yieldToBrowser(): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, 0));
}

/** Set `node`'s text to `text`, appending when it only grew (no re-layout of what was there). */
function setGrowingText(node: HTMLElement, text: string): void {
  const first = node.firstChild;
  if (first && first.nodeType === Node.TEXT_NODE && node.childNodes.length === 1) {
    const t = first as Text;
    const old = t.data;
    if (text === old) {
      return;
    }
    if (text.length > old.length && text.startsWith(old)) {
      t.appendData(text.slice(old.length));
      return;
    }
  }
  node.textContent = text;
}

function badgeElement(b: Badge): HTMLElement {
  const e = el('span', `boop-Badge boop-mod-${b.tone}`);
  e.title = b.title;
  e.append(el('span', 'boop-Badge-icon', b.icon), el('span', 'boop-Badge-label', b.label));
  e.firstElementChild!.setAttribute('aria-hidden', 'true');
  return e;
}

/** Model headings become plain styled lines: out of any table of contents, and without ids. */
export function demoteHeadings(host: HTMLElement): void {
  for (const h of Array.from(host.querySelectorAll('h1, h2, h3, h4, h5, h6'))) {
    const d = el('div', 'boop-Heading');
    d.dataset.level = h.tagName.slice(1);
    for (const child of Array.from(h.childNodes)) {
      if (!(child instanceof HTMLElement && child.classList.contains('jp-InternalAnchorLink'))) {
        d.append(child);
      }
    }
    h.replaceWith(d);
  }
}

function codeLanguage(pre: HTMLElement): string {
  const code = pre.querySelector('code');
  const cls = (code?.className ?? '') + ' ' + pre.className;
  const m = /(?:^|\s)language-([\w+#.-]+)/.exec(cls);
  return m ? m[1].toLowerCase() : (pre.dataset.language ?? code?.dataset.language ?? '').toLowerCase();
}

export type IconName = 'insert' | 'run' | 'copy' | 'stop';
/** Text marks for the icons when no icon set is given (the unit tests). */
const GLYPHS: { [K in IconName]: string } = { insert: '⤓', run: '▶', copy: '⧉', stop: '■' };
export type IconFactory = (name: IconName) => HTMLElement;
const textIcon: IconFactory = name => el('span', '', GLYPHS[name]);

/** Each code block gets its actions: Insert below, Insert and run (kernel languages only), Copy. */
export function addCodeActions(host: HTMLElement, inNotebook: boolean, icon: IconFactory = textIcon): void {
  for (const pre of Array.from(host.querySelectorAll('pre'))) {
    if (pre.parentElement?.classList.contains('boop-Code')) {
      continue;
    }
    const wrap = el('div', 'boop-Code');
    pre.replaceWith(wrap);
    const bar = el('div', 'boop-CodeActions');
    bar.setAttribute('role', 'toolbar');
    bar.setAttribute('aria-label', 'Code actions');
    const button = (action: IconName, label: string, title: string) => {
      const b = el('button', 'boop-CodeAction');
      b.type = 'button';
      b.dataset.boopAction = action;
      b.title = title;
      const mark = icon(action);
      mark.classList.add('boop-CodeAction-icon');
      mark.setAttribute('aria-hidden', 'true');
      b.append(mark, el('span', 'boop-CodeAction-label', label));
      return b;
    };
    if (inNotebook) {
      bar.append(button('insert', 'Insert', 'Insert below the prompt as a new code cell'));
      if (RUNNABLE.has(codeLanguage(pre))) {
        bar.append(button('run', 'Insert and run', 'Insert below the prompt and run it'));
      }
    }
    bar.append(button('copy', 'Copy', 'Copy the code'));
    wrap.append(pre, bar);
  }
}

/**
 * Blocks the tool loop ran already (their text, trimmed, in `ran`) lose "Insert and run": a click would run the
 * calls a second time. Insert and Copy stay.
 */
export function markRanBlocks(host: HTMLElement, ran: ReadonlySet<string>): void {
  if (!ran.size) {
    return;
  }
  for (const wrap of Array.from(host.querySelectorAll('.boop-Code'))) {
    if (ran.has(codeOf(wrap).trim())) {
      wrap.classList.add('boop-mod-ran');
      wrap.querySelector('[data-boop-action="run"]')?.remove();
    }
  }
}

function codeOf(wrap: Element): string {
  const pre = wrap.querySelector('pre');
  const text = pre?.textContent ?? '';
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

/** Show a short confirmation on a button, then restore it. */
function flash(button: HTMLButtonElement, text: string): void {
  const label = button.querySelector('.boop-CodeAction-label');
  if (!label) {
    return;
  }
  const old = button.dataset.label ?? label.textContent ?? '';
  button.dataset.label = old;
  label.textContent = text;
  window.setTimeout(() => {
    label.textContent = old;
  }, 1500);
}

export class ReplyView {
  readonly node: HTMLElement;

  constructor(hooks: IReplyHooks) {
    this._hooks = hooks;
    this._now = hooks.now ?? (() => performance.now());
    this.node = el('div', 'boop-Reply');
    this.node.addEventListener('click', this._onClick);
    this._follower = new StreamFollower(this.node, this._now);
  }

  /** The bundle last shown. */
  get data(): ReplyBundle | null {
    return this._data;
  }

  /** Resolves once everything asked for so far is rendered. */
  idle(): Promise<void> {
    if (!this._pumping && !this._wake) {
      return Promise.resolve();
    }
    return new Promise(resolve => this._idleWaiters.push(resolve));
  }

  /** Show `data`; the returned promise resolves when it is fully rendered (or superseded). */
  update(data: ReplyBundle): Promise<void> {
    if (this._data && this._data.kind !== data.kind) {
      this._reset();
    }
    this._data = data;
    switch (data.kind) {
      case 'reply':
        this._reply(data);
        break;
      case 'tool_round':
        this._toolRound(data);
        break;
      case 'tool_loop':
        this._toolLoop(data);
        break;
    }
    this.node.dataset.boopKind = data.kind;
    return this.idle();
  }

  /** The view was attached to the page: start following a live reply. */
  attached(): void {
    this._attached = true;
    this._syncLive();
  }

  detached(): void {
    this._attached = false;
    if (this._keepFrame) {
      cancelAnimationFrame(this._keepFrame);
      this._keepFrame = 0;
    }
    this._follower.stop();
    this._stopTimer();
  }

  dispose(): void {
    this.detached();
    this._disposed = true;
    this._io?.disconnect();
    this._io = null;
    if (this._mathTimer) {
      clearTimeout(this._mathTimer);
      this._mathTimer = 0;
    }
    if (this._wake) {
      clearTimeout(this._wake);
      this._wake = 0;
    }
    this._resolveIdle();
  }

  // -- the reply

  private _reset(): void {
    this.node.replaceChildren();
    this._parts = null;
    this._slots.forEach(s => (s.removed = true));
    this._slots = [];
    this._chunks.forEach(c => this._forget(c));
    this._chunks = [];
    this._queue = [];
    this._tracker = new BlockTracker();
    this._steps = [];
    this._ran = new Set();
    this._follower.stop();
    this._stopTimer();
  }

  private _reply(r: ReplyData): void {
    const p = this._parts ?? this._build();
    const live = isLive(r.status);
    this.node.classList.toggle('boop-mod-live', live);
    this.node.dataset.boopStatus = r.status;

    // badges: how it ended, reused, cut off (streaming/waiting are said by the live line instead)
    const badges = replyBadges(r).filter(b => b.tone !== 'progress');
    const key = badges.map(b => b.label).join('|');
    if (key !== p.badgesKey) {
      p.badgesKey = key;
      p.badges.replaceChildren(...badges.map(badgeElement));
      p.badges.hidden = !badges.length;
    }

    // reasoning: plain text in a <details> built once, so open/closed survives every update
    p.reasoning.hidden = !r.reasoning;
    if (r.reasoning) {
      const label = r.reasoning_label || 'Reasoning';
      if (p.reasoningSummary.textContent !== label) {
        p.reasoningSummary.textContent = label;
      }
      setGrowingText(p.reasoningText, r.reasoning);
    }
    p.reasoning.classList.toggle('boop-mod-streaming', r.reasoning_streaming);

    // the answer, block by block; the blocks the tool loop ran lose "Insert and run" (their list comes at the end)
    const ran = (r.ran_blocks ?? []).map(b => b.trim());
    if (ran.some(b => !this._ran.has(b))) {
      this._ran = new Set(ran);
      markRanBlocks(p.body, this._ran);
    }
    this._blocks(r.markdown, !live);

    // notes, warning, details
    const note = r.status === 'waiting' ? '' : r.note ?? '';
    setText(p.note, note);
    p.note.hidden = !note;
    setText(p.warning, r.warning ? `⚠ ${r.warning}` : '');
    p.warning.hidden = !r.warning;
    const summary = r.summary ? `Reply details · ${r.summary}` : 'Reply details';
    setText(p.detailsSummary, summary);
    const rows = r.details.join('\n');
    if (rows !== p.detailsKey) {
      p.detailsKey = rows;
      p.detailsList.replaceChildren(...r.details.map(d => el('li', '', d)));
    }
    p.details.hidden = !r.details.length && !r.summary;

    // the live line: what is happening, for how long, and a stop button
    p.live.hidden = !live;
    if (live) {
      const what = r.status === 'waiting' ? `Waiting for ${r.model || 'the model'}` : `Streaming from ${r.model || 'the model'}`;
      setText(p.liveText, r.status === 'waiting' && r.note ? `${what} · ${r.note}` : what);
      if (this._liveSince === null) {
        this._liveSince = this._now();
      }
    } else {
      this._liveSince = null;
      p.stop.disabled = false;
      setText(p.stopLabel, 'Stop');
    }
    this._syncLive();
  }

  private _build(): Parts {
    const badges = el('div', 'boop-Reply-badges');
    badges.hidden = true;
    const reasoning = el('details', 'boop-Reply-reasoning');
    const reasoningSummary = el('summary', 'boop-Reply-reasoningSummary');
    const reasoningText = el('div', 'boop-Reply-reasoningText');
    reasoning.append(reasoningSummary, reasoningText);
    reasoning.hidden = true;
    const body = el('div', 'boop-Reply-body jp-RenderedHTMLCommon jp-RenderedMarkdown');
    const note = el('div', 'boop-Reply-note');
    const warning = el('div', 'boop-Reply-warning');
    warning.setAttribute('role', 'note');
    const details = el('details', 'boop-Reply-details');
    const detailsSummary = el('summary', '', 'Reply details');
    const detailsList = el('ul', 'boop-Reply-detailsList');
    details.append(detailsSummary, detailsList);
    details.hidden = true;
    const live = el('div', 'boop-Reply-live');
    live.hidden = true;
    const liveText = el('span', 'boop-Reply-liveText');
    const elapsed = el('span', 'boop-Reply-elapsed');
    const stop = el('button', 'boop-Reply-stop jp-mod-styled');
    stop.type = 'button';
    stop.dataset.boopAction = 'stop';
    stop.title = 'Interrupt the kernel: stop this reply';
    const stopLabel = el('span', '', 'Stop');
    const stopIcon = (this._hooks.icon ?? textIcon)('stop');
    stopIcon.classList.add('boop-Reply-stopIcon');
    stopIcon.setAttribute('aria-hidden', 'true');
    stop.append(stopIcon, stopLabel);
    live.append(el('span', 'boop-Reply-spinner'), liveText, elapsed, stop);
    live.firstElementChild!.setAttribute('aria-hidden', 'true');
    this.node.append(badges, reasoning, body, note, warning, details, live);
    this._parts = {
      badges,
      badgesKey: '',
      reasoning,
      reasoningSummary,
      reasoningText,
      body,
      note,
      warning,
      details,
      detailsSummary,
      detailsList,
      detailsKey: '',
      live,
      liveText,
      elapsed,
      stop,
      stopLabel
    };
    return this._parts;
  }

  private _syncLive(): void {
    const live = this._data?.kind === 'reply' && isLive(this._data.status);
    if (live && this._attached) {
      this._follower.start();
      this._scheduleKeep();
      this._startTimer();
    } else {
      if (!live) {
        this._scheduleKeep(); // a last look at the end, then let go
      }
      this._stopTimer();
    }
  }

  /** Keep the reply's end in view, once per frame at most (reading its position forces a layout). */
  private _scheduleKeep(): void {
    if (this._keepFrame || !this._follower.active) {
      return;
    }
    this._keepFrame = requestAnimationFrame(() => {
      this._keepFrame = 0;
      this._follower.keep();
      const live = this._data?.kind === 'reply' && isLive(this._data.status);
      if (!live && !this._pumping && !this._queue.length) {
        this._follower.stop();
      }
    });
  }

  private _startTimer(): void {
    if (this._timer) {
      return;
    }
    const tick = () => {
      if (this._parts && this._liveSince !== null) {
        const s = Math.floor((this._now() - this._liveSince) / 1000);
        setText(this._parts.elapsed, s >= 1 ? `${s} s` : '');
      }
    };
    tick();
    this._timer = window.setInterval(tick, 1000);
  }

  private _stopTimer(): void {
    if (this._timer) {
      clearInterval(this._timer);
      this._timer = 0;
    }
    if (this._parts) {
      setText(this._parts.elapsed, '');
    }
  }

  // -- the Markdown, block by block

  private _blocks(text: string, final: boolean): void {
    const body = this._parts!.body;
    const { blocks, stable } = this._tracker.update(text);
    this._final = final;
    for (let i = stable; i < blocks.length; i++) {
      const b: Block = blocks[i];
      const want = text.slice(b.start, b.end);
      const fence = b.kind === 'fence' && b.open && !final;
      let slot = this._slots[i];
      if (!slot) {
        const c = Math.floor(i / CHUNK);
        let chunk = this._chunks[c];
        if (!chunk) {
          chunk = this._chunks[c] = el('div', 'boop-Chunk');
          body.append(chunk);
        }
        slot = {
          el: el('div', 'boop-Block'),
          chunk,
          want: '',
          fence: false,
          shown: '',
          shownFence: false,
          queued: false,
          gen: 0,
          lastStart: -Infinity,
          lastCost: 0,
          removed: false
        };
        this._slots.push(slot);
        chunk.append(slot.el);
      }
      if (slot.want !== want || slot.fence !== fence || slot.shown !== want || slot.shownFence !== fence) {
        slot.want = want;
        slot.fence = fence;
        this._enqueue(i);
      }
    }
    while (this._slots.length > blocks.length) {
      const s = this._slots.pop()!;
      s.removed = true;
      s.el.remove();
    }
    for (const slot of this._mathWaiting) {
      if (slot.removed || slot.shown !== slot.want || slot.queued) {
        this._mathWaiting.delete(slot); // rendered again: decided anew then
      } else if (final || slot !== this._slots[this._slots.length - 1]) {
        this._mathWaiting.delete(slot);
        this._toTypeset.add(slot.chunk);
      }
    }
    while (this._chunks.length > Math.ceil(this._slots.length / CHUNK)) {
      const chunk = this._chunks.pop()!;
      chunk.remove();
      this._forget(chunk);
    }
    this._pump();
  }

  private _forget(chunk: HTMLElement): void {
    this._toTypeset.delete(chunk);
    this._inView.delete(chunk);
    if (this._observed.delete(chunk)) {
      this._io?.unobserve(chunk);
    }
  }

  private _enqueue(i: number): void {
    const slot = this._slots[i];
    if (slot.queued) {
      return;
    }
    slot.queued = true;
    const q = this._queue;
    q.push(i);
    if (q.length > 1 && q[q.length - 2] > i) {
      q.sort((a, b) => a - b);
    }
  }

  private async _pump(): Promise<void> {
    if (this._queue.length) {
      this.node.dataset.boopPending = '1'; // until a pass finds nothing left (a running pass takes this work too)
    }
    if (this._pumping || this._disposed) {
      return;
    }
    this._pumping = true;
    if (this._final && this._wake) {
      clearTimeout(this._wake);
      this._wake = 0;
    }
    let slice = this._now();
    let deferred: number | null = null;
    try {
      while (this._queue.length && !this._disposed) {
        const i = this._queue[0];
        const slot = this._slots[i];
        if (!slot || slot.removed) {
          this._queue.shift();
          continue;
        }
        if (slot.fence) {
          this._queue.shift();
          slot.queued = false;
          this._showFence(slot);
          continue;
        }
        const last = i === this._slots.length - 1;
        if (last && !this._final && slot.shown && !mayRerender(this._now(), slot.lastStart, slot.lastCost)) {
          // a growing last block is rendered again only as often as its cost allows
          deferred = slot.lastStart + slot.lastCost / 0.2 - this._now();
          break;
        }
        this._queue.shift();
        slot.queued = false;
        await this._render(slot);
        if (this._now() - slice > SLICE_MS) {
          this._afterRender();
          await yieldToBrowser();
          slice = this._now();
        }
      }
    } finally {
      this._pumping = false;
    }
    this._afterRender();
    if (deferred !== null && !this._wake) {
      this._wake = window.setTimeout(
        () => {
          this._wake = 0;
          void this._pump();
        },
        Math.max(0, deferred)
      );
    }
    if (!this._queue.length && !this._wake) {
      this._resolveIdle();
    }
  }

  private _showFence(slot: Slot): void {
    let pre = slot.el.firstElementChild as HTMLElement | null;
    if (!slot.shownFence || !pre || pre.tagName !== 'PRE') {
      pre = el('pre', 'boop-Block-streamingCode');
      pre.append(el('code'));
      slot.el.replaceChildren(pre);
    }
    setGrowingText(pre.firstElementChild as HTMLElement, openFenceBody(slot.want));
    slot.shown = slot.want;
    slot.shownFence = true;
    slot.gen++;
  }

  private async _render(slot: Slot): Promise<void> {
    const source = slot.want;
    const gen = ++slot.gen;
    const host = el('div', 'boop-Block-content');
    const start = this._now();
    slot.lastStart = start;
    try {
      await this._hooks.renderMarkdown(host, source);
    } catch {
      host.replaceChildren(el('pre', '', source));
    }
    slot.lastCost = this._now() - start;
    if (gen !== slot.gen || slot.removed) {
      return;
    }
    demoteHeadings(host);
    addCodeActions(host, this._inNotebook(), this._hooks.icon);
    markRanBlocks(host, this._ran);
    slot.el.replaceChildren(host);
    slot.shown = source;
    slot.shownFence = false;
    if (this._hooks.typeset && MATH.test(source)) {
      // the growing last block's math waits until the block is complete: typeset once, not on every token
      if (!this._final && slot === this._slots[this._slots.length - 1]) {
        this._mathWaiting.add(slot);
      } else {
        this._toTypeset.add(slot.chunk);
      }
    }
  }

  private _inNotebook(): boolean {
    if (this._notebook === null && this.node.isConnected) {
      this._notebook = !!this.node.closest('.jp-Notebook');
    }
    return this._notebook ?? true;
  }

  /**
   * Typeset the chunks whose math changed that are (nearly) in view; the others when they come into view.
   * While the reply streams this runs at most every `MATH_MS`, so chunks the stream scrolls past fast
   * are typeset when someone looks at them, not on the way.
   */
  private _typesetVisible(): void {
    if (!this._toTypeset.size || !this._hooks.typeset) {
      return;
    }
    if (!this._io && typeof IntersectionObserver !== 'undefined') {
      this._io = new IntersectionObserver(this._onIntersect, { rootMargin: '600px 0px' });
    }
    for (const chunk of this._toTypeset) {
      if (chunk.isConnected && this._io && !this._observed.has(chunk)) {
        this._observed.add(chunk);
        this._io.observe(chunk); // reports whether it is in view, now and on every change
      }
    }
    const live = this._data?.kind === 'reply' && isLive(this._data.status);
    if (!live) {
      this._typesetNow();
    } else if (!this._mathTimer) {
      this._mathTimer = window.setTimeout(() => {
        this._mathTimer = 0;
        this._typesetNow();
      }, MATH_MS);
    }
  }

  private _typesetNow(): void {
    for (const chunk of this._toTypeset) {
      if (!chunk.isConnected) {
        this._toTypeset.delete(chunk);
      } else if (!this._io || this._inView.has(chunk)) {
        this._toTypeset.delete(chunk);
        this._hooks.typeset?.(chunk);
      }
    }
  }

  private _onIntersect = (entries: IntersectionObserverEntry[]): void => {
    for (const e of entries) {
      const chunk = e.target as HTMLElement;
      if (e.isIntersecting) {
        this._inView.add(chunk);
      } else {
        this._inView.delete(chunk);
      }
    }
    if (this._toTypeset.size) {
      this._typesetVisible();
    }
  };

  private _afterRender(): void {
    this._typesetVisible();
    this._scheduleKeep();
    this.node.dataset.boopPending = this._queue.length || this._wake ? '1' : '0';
  }

  private _resolveIdle(): void {
    this.node.dataset.boopPending = '0';
    const waiters = this._idleWaiters;
    this._idleWaiters = [];
    waiters.forEach(w => w());
  }

  // -- tool rounds

  private _toolRound(t: ToolRoundData): void {
    if (!this._parts && !this.node.firstChild) {
      this.node.classList.add('boop-Tools');
      this.node.append(el('div', 'boop-Tools-head'), el('ul', 'boop-Tools-list'));
    }
    const head = this.node.querySelector('.boop-Tools-head') as HTMLElement;
    const list = this.node.querySelector('.boop-Tools-list') as HTMLElement;
    const n = t.steps.length;
    setText(head, `Tool calls · round ${t.round} · ${n} call${n === 1 ? '' : 's'}`);
    t.steps.forEach((step, i) => {
      const key = JSON.stringify(step);
      let item = this._steps[i];
      if (!item) {
        const li = el('li', 'boop-Tool');
        const details = el('details');
        li.append(details);
        list.append(li);
        item = this._steps[i] = { li, details, key: '' };
      }
      if (item.key === key) {
        return;
      }
      item.key = key;
      const mark = toolMark(step.status);
      item.li.className = `boop-Tool boop-mod-${mark.tone}`;
      const summary = el('summary', 'boop-Tool-summary');
      const icon = el('span', 'boop-Tool-icon', mark.icon);
      icon.setAttribute('aria-hidden', 'true');
      const firstLine = step.source.split('\n', 1)[0];
      summary.append(
        icon,
        el('code', 'boop-Tool-call', firstLine + (step.source.includes('\n') ? ' …' : '')),
        el('span', 'boop-Tool-status', step.status || 'pending')
      );
      const parts: HTMLElement[] = [summary, el('div', 'boop-Tool-label', 'call'), el('pre', 'boop-Tool-source', step.source)];
      if (step.result) {
        parts.push(el('div', 'boop-Tool-label', 'result'), el('pre', 'boop-Tool-result', step.result));
      }
      if (step.flags.length) {
        parts.push(el('div', 'boop-Tool-flags', `⚠ flagged: ${step.flags.join(', ')}`));
      }
      if (step.recovered) {
        parts.push(el('div', 'boop-Tool-note', 'recovered from a malformed call'));
      }
      item.details.replaceChildren(...parts);
    });
    while (this._steps.length > n) {
      this._steps.pop()!.li.remove();
    }
  }

  private _toolLoop(t: ToolLoopData): void {
    let details = this.node.querySelector('details.boop-ToolLoop') as HTMLDetailsElement | null;
    if (!details) {
      details = el('details', 'boop-ToolLoop');
      details.append(el('summary'), el('ul', 'boop-ToolLoop-list'), el('div', 'boop-ToolLoop-note'));
      this.node.append(details);
    }
    const calls = t.steps.length;
    const bits = ['Tool loop', t.stop ? `stopped: ${t.stop}` : '', `${t.rounds} round${t.rounds === 1 ? '' : 's'}`,
      `${calls} call${calls === 1 ? '' : 's'}`];
    setText(details.querySelector('summary') as HTMLElement, bits.filter(Boolean).join(' · '));
    const list = details.querySelector('.boop-ToolLoop-list') as HTMLElement;
    const key = JSON.stringify(t.steps);
    if (list.dataset.key !== key) {
      list.dataset.key = key;
      list.replaceChildren(
        ...t.steps.map(s => {
          const mark = toolMark(s.status);
          const li = el('li', `boop-Tool boop-mod-${mark.tone}`);
          const icon = el('span', 'boop-Tool-icon', mark.icon);
          icon.setAttribute('aria-hidden', 'true');
          li.append(icon, el('span', 'boop-Tool-round', `round ${s.round}`), el('code', 'boop-Tool-call', s.source),
            el('span', 'boop-Tool-status', s.status));
          return li;
        })
      );
    }
    setText(details.querySelector('.boop-ToolLoop-note') as HTMLElement, t.note);
  }

  // -- actions

  private _onClick = (e: MouseEvent): void => {
    const button = (e.target as HTMLElement).closest('[data-boop-action]') as HTMLButtonElement | null;
    if (!button || !this.node.contains(button)) {
      return;
    }
    const action = button.dataset.boopAction;
    if (action === 'stop') {
      const actions = this._hooks.actions(this.node);
      if (actions) {
        button.disabled = true;
        setText(this._parts!.stopLabel, 'Stopping…');
        void actions.stop();
      }
      return;
    }
    const wrap = button.closest('.boop-Code');
    if (!wrap) {
      return;
    }
    const code = codeOf(wrap);
    if (action === 'copy') {
      this._hooks.copy(code);
      flash(button, 'Copied ✓');
      return;
    }
    const actions = this._hooks.actions(this.node);
    if (!actions) {
      flash(button, 'Not in a notebook');
      return;
    }
    const run = action === 'run';
    actions.insert(code, run).then(
      () => flash(button, run ? 'Running below ✓' : 'Inserted below ✓'),
      () => flash(button, 'Could not insert')
    );
  };

  private _hooks: IReplyHooks;
  private _now: () => number;
  private _data: ReplyBundle | null = null;
  private _parts: Parts | null = null;
  private _tracker = new BlockTracker();
  private _slots: Slot[] = [];
  private _chunks: HTMLElement[] = [];
  private _toTypeset = new Set<HTMLElement>();
  private _io: IntersectionObserver | null = null;
  private _mathWaiting = new Set<Slot>();
  private _keepFrame = 0;
  private _mathTimer = 0;
  private _observed = new Set<HTMLElement>();
  private _inView = new Set<HTMLElement>();
  private _queue: number[] = [];
  private _final = false;
  private _pumping = false;
  private _wake = 0;
  private _idleWaiters: (() => void)[] = [];
  private _steps: { li: HTMLElement; details: HTMLDetailsElement; key: string }[] = [];
  /** The trimmed text of the blocks the tool loop ran (`ran_blocks`). */
  private _ran = new Set<string>();
  private _follower: StreamFollower;
  private _attached = false;
  private _timer = 0;
  private _liveSince: number | null = null;
  private _notebook: boolean | null = null;
  private _disposed = false;
}

function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) {
    node.textContent = text;
  }
}
