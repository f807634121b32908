/**
 * A reply's Markdown, rendered block by block into the reply's body, a time slice at a time. The blocks are the
 * kernel's (each made safe on its own), rendered as they come, never split again: only blocks whose text changed
 * are rendered again, the growing last one only as often as its cost allows, and a code fence the model has not
 * closed yet shows as plain code while the reply streams. Math is typeset a chunk of blocks at a time, once the
 * chunk is (nearly) in view. Model text only enters through `renderMarkdown` (Jupyter's sanitizer with the reply's
 * strict options: nothing remote is fetched), and what it renders is checked once more (`dropRemote`).
 */

import { el, setGrowingText } from '../dom';
import { mayRerender, openFenceBody } from './blocks';
import { addCodeActions, IconFactory, markRanBlocks } from './codeactions';
import { dropRemote } from './sanitizer';

/** Time (ms) the render loop may hold the main thread before it yields to the browser. */
export const SLICE_MS = 12;
/** Blocks per chunk: the unit of layout skipping (`content-visibility`) and of math typesetting. */
export const CHUNK = 32;
/** Sources that may hold math for the typesetter ($, \( or \[); others are not typeset at all. */
const MATH = /\$|\\\(|\\\[/;
/** While a reply streams, math is typeset at most this often (ms). */
export const MATH_MS = 400;

/** How blocks are rendered: Jupyter's functions in the notebook, stand-ins in the unit tests. */
export interface IRenderHooks {
  /** Render one block of untrusted Markdown into `host` (Jupyter's `renderMarkdown`, `trusted: false`, strict). */
  renderMarkdown(host: HTMLElement, source: string): Promise<void>;
  /** Typeset the math in `node` (Jupyter's latexTypesetter); blocks are typeset a chunk at a time. */
  typeset?(node: HTMLElement): void;
  /** The theme's icons for the buttons (text marks if not given). */
  icon?: IconFactory;
}

/** What the blocks need of the reply view they render into. */
export interface IBlocksOwner {
  /** The reply's node: it says whether work is pending (`data-boop-pending`), and whether it sits in a notebook. */
  readonly node: HTMLElement;
  readonly hooks: IRenderHooks;
  readonly now: () => number;
  /** Whether the reply still streams (its math is typeset at most every `MATH_MS` then). */
  live(): boolean;
  /** The trimmed text of the blocks the tool loop ran (`ran_blocks`): they lose "Insert and run". */
  ran(): ReadonlySet<string>;
  /** A render pass ended: keep the reply's end in view. */
  rendered(): void;
  /** Whether the reply is a fix for a cell (`fixes`): its python blocks offer to replace that cell. */
  fixes?(): boolean;
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

export class MarkdownBlocks {
  constructor(owner: IBlocksOwner) {
    this._owner = owner;
    this._hooks = owner.hooks;
    this._now = owner.now;
  }

  /** Whether blocks are being rendered, or wait to be. */
  get busy(): boolean {
    return this._pumping || this._queue.length > 0;
  }

  /** Resolves once everything asked for so far is rendered. */
  idle(): Promise<void> {
    if (!this._pumping && !this._wake) {
      return Promise.resolve();
    }
    return new Promise(resolve => this._idleWaiters.push(resolve));
  }

  /** Forget every block (the view shows another kind of bundle now). */
  reset(): void {
    this._slots.forEach(s => (s.removed = true));
    this._slots = [];
    this._chunks.forEach(c => this._forget(c));
    this._chunks = [];
    this._queue = [];
  }

  dispose(): void {
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

  /**
   * Show `blocks`, the answer's blocks so far, in `body`; `final` once the reply no longer grows; `open`: the last
   * block is a code fence not closed yet (shown as plain code while the reply grows).
   */
  update(body: HTMLElement, blocks: readonly string[], final: boolean, open = false): void {
    this._final = final;
    for (let i = 0; i < blocks.length; i++) {
      const want = blocks[i];
      const fence = open && !final && i === blocks.length - 1;
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
      if (slot.want !== want || slot.fence !== fence) {   // unchanged: its DOM stays (or its render, under way, shows it)
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
      this._owner.node.dataset.boopPending = '1'; // until a pass finds nothing left (a running pass takes this work too)
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
    dropRemote(host);
    demoteHeadings(host);
    addCodeActions(host, this._inNotebook(), this._hooks.icon, this._owner.fixes?.() ?? false);
    markRanBlocks(host, this._owner.ran());
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
    const node = this._owner.node;
    if (this._notebook === null && node.isConnected) {
      this._notebook = !!node.closest('.jp-Notebook');
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
    const live = this._owner.live();
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
    this._owner.rendered();
    this._owner.node.dataset.boopPending = this._queue.length || this._wake ? '1' : '0';
  }

  private _resolveIdle(): void {
    this._owner.node.dataset.boopPending = '0';
    const waiters = this._idleWaiters;
    this._idleWaiters = [];
    waiters.forEach(w => w());
  }

  private _owner: IBlocksOwner;
  private _hooks: IRenderHooks;
  private _now: () => number;
  private _slots: Slot[] = [];
  private _chunks: HTMLElement[] = [];
  private _toTypeset = new Set<HTMLElement>();
  private _io: IntersectionObserver | null = null;
  private _mathWaiting = new Set<Slot>();
  private _mathTimer = 0;
  private _observed = new Set<HTMLElement>();
  private _inView = new Set<HTMLElement>();
  private _queue: number[] = [];
  private _final = false;
  private _pumping = false;
  private _wake = 0;
  private _idleWaiters: (() => void)[] = [];
  private _notebook: boolean | null = null;
  private _disposed = false;
}
