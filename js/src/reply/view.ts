/**
 * The DOM of a reply (`application/vnd.boopiter.reply+json`), updated in place as it streams.
 *
 * Plain DOM plus two injected functions (how to render one Markdown block, what the code actions
 * do), so it is unit-tested in jsdom. Each update keeps every element it can: the reasoning and
 * details sections (with their open/closed state), the blocks whose Markdown did not change, the
 * open/closed state of each tool call. Model text only ever enters as `textContent` or through
 * `renderMarkdown` (Jupyter's sanitizer with the reply's strict options, untrusted), one kernel-vetted block at a time.
 */

import { el, setGrowingText, setText } from '../dom';
import { ReplyBundle, ReplyData } from '../protocol/bundles';
import { isLive, replyBadges } from './badges';
import { cellOf, codeOf, flash, markRanBlocks } from './codeactions';
import { StreamFollower } from './follow';
import { IRenderHooks, MarkdownBlocks } from './markdown';
import { badgeElement, buildParts, Parts } from './parts';
import { drawStale } from './stale';
import { drawToolLoop, drawToolRound, IToolStepView } from './tools';

export interface IReplyHooks extends IRenderHooks {
  /** The code actions and the stop button; null outside a notebook (only Copy is offered). */
  actions(node: HTMLElement): IReplyActions | null;
  /** Copy to the clipboard. */
  copy(text: string): void;
  now?: () => number;
}

export interface IReplyActions {
  /**
   * Insert `code` in a new code cell below the prompt cell; run it with the notebook's own run if `run`, once `after`
   * resolves when given (the reply it came from streams on: what it produced is used once it has ended).
   */
  insert(code: string, run: boolean, after?: Promise<void>): Promise<void>;
  /** Interrupt the kernel (the stop button). */
  stop(): Promise<void>;
  /** Ask again (a stale reply's action, `stale.ts`): false if the kernel could not hear it. */
  fresh?(): Promise<boolean>;
  /** Put `code` in the cell the reply is a fix for, once the user accepts the diff, and run it; one line for the button. */
  replace?(code: string): Promise<string>;
}

export class ReplyView {
  readonly node: HTMLElement;

  constructor(hooks: IReplyHooks) {
    this._hooks = hooks;
    this._now = hooks.now ?? (() => performance.now());
    this.node = el('div', 'boop-Reply');
    this.node.addEventListener('click', this._onClick);
    this._follower = new StreamFollower(this.node, this._now);
    this._markdown = new MarkdownBlocks({
      node: this.node,
      hooks,
      now: this._now,
      live: () => this._data?.kind === 'reply' && isLive(this._data.status),
      ran: () => this._ran,
      rendered: () => this._scheduleKeep(),
      fixes: () => this._data?.kind === 'reply' && !!this._data.fixes
    });
  }

  /** The bundle last shown. */
  get data(): ReplyBundle | null {
    return this._data;
  }

  /** Resolves once everything asked for so far is rendered. */
  idle(): Promise<void> {
    return this._markdown.idle();
  }

  /** Show `data`; the returned promise resolves when it is fully rendered (or superseded). */
  update(data: ReplyBundle): Promise<void> {
    if (this._data && this._data.kind !== data.kind) {
      this._reset();
    }
    this._data = data;
    if (data.kind === 'reply' && !isLive(data.status)) {
      this._ended.splice(0).forEach(resolve => resolve()); // what waited for the reply to end
    }
    switch (data.kind) {
      case 'reply':
        this._reply(data);
        break;
      case 'tool_round':
        drawToolRound(this.node, data, this._steps);
        break;
      case 'tool_loop':
        drawToolLoop(this.node, data);
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
    this._markdown.dispose();
  }

  // -- the reply

  private _reset(): void {
    this.node.replaceChildren();
    this._parts = null;
    this._markdown.reset();
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
    this._markdown.update(p.body, r.blocks, !live, r.open);

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
    drawStale(this.node, r);

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
    this._parts = buildParts(this.node, this._hooks.icon);
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
      if (!live && !this._markdown.busy) {
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

  // -- actions

  private _onClick = (e: MouseEvent): void => {
    const button = (e.target as HTMLElement).closest('[data-boop-action]') as HTMLButtonElement | null;
    if (!button || !this.node.contains(button)) {
      return;
    }
    const action = button.dataset.boopAction;
    if (action === 'fresh') {
      const fresh = this._hooks.actions(this.node)?.fresh;
      if (!fresh) {
        flash(button, 'Run %%prompt --fresh');
        return;
      }
      button.disabled = true;
      fresh().then(
        ok => {
          button.disabled = false;
          if (!ok) {
            flash(button, 'Run %%prompt --fresh');
          }
        },
        () => {
          button.disabled = false;
          flash(button, 'Could not ask');
        }
      );
      return;
    }
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
    if (action === 'replace') {
      if (!actions.replace) {
        flash(button, 'That cell is gone');
        return;
      }
      button.disabled = true;
      actions.replace(code).then(
        said => {
          button.disabled = false;
          flash(button, said);
        },
        () => {
          button.disabled = false;
          flash(button, 'Could not change the cell');
        }
      );
      return;
    }
    const run = action === 'run';
    const cell = cellOf(wrap as HTMLElement); // the cell that runs it: a shell block under %%bash
    if (cell === null) {
      return; // a language the kernel cannot run: Copy only
    }
    if (run && this._data?.kind === 'reply' && isLive(this._data.status)) {
      // the reply streams on: its block is inserted now and runs once the reply has ended, and says so
      flash(button, 'Inserted below ✓ · it runs when the reply ends');
      actions.insert(cell, run, new Promise<void>(resolve => this._ended.push(resolve))).then(
        () => flash(button, 'Running below ✓'),
        () => flash(button, 'Could not insert')
      );
      return;
    }
    actions.insert(cell, run).then(
      () => flash(button, run ? 'Running below ✓' : 'Inserted below ✓'),
      () => flash(button, 'Could not insert')
    );
  };

  private _hooks: IReplyHooks;
  private _now: () => number;
  private _data: ReplyBundle | null = null;
  private _parts: Parts | null = null;
  private _markdown: MarkdownBlocks;
  private _keepFrame = 0;
  private _steps: IToolStepView[] = [];
  /** The trimmed text of the blocks the tool loop ran (`ran_blocks`). */
  private _ran = new Set<string>();
  /** Resolvers of what waits for this reply to end (a block's Insert and run clicked while it streams). */
  private _ended: (() => void)[] = [];
  private _follower: StreamFollower;
  private _attached = false;
  private _timer = 0;
  private _liveSince: number | null = null;
}
