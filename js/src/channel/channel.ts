/**
 * The comm channel to boopiter in a notebook's kernel: one per document context (views of the same
 * notebook share it), reconnected on every kernel start, restart and change (`KernelLink`, `link.ts`).
 *
 * While the comm is open it keeps the kernel's view of the notebook current (`notebook` messages, at most one
 * per `CELLS_DELAY_MS`, and one at once before a prompt cell runs), asks for dry runs, and carries out the
 * edits the model's notebook tools ask for (one undoable step each, answered with `edit_result`): an edit or a
 * deletion only once the user accepts it in the cell (`cells/review.ts`). What a prompt's reply changed is noted in a
 * `Journal`, and a bar on the prompt cell undoes all of it as one step. It loads boopiter:
 * through the notebook's own load cell (the menu's "Load boopiter", `loadWith`), or silently before a prompt cell in a
 * kernel that has not loaded it yet (`promptScheduled`: the request precedes the cell's on the shell channel, so no
 * Run All races it). It sends the reply view's Stop over the comm's subshell, and saves the binding the kernel sends
 * in the notebook's metadata.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONExt } from '@lumino/coreutils';
import { Signal } from '@lumino/signaling';
import { LOAD_CODE, METADATA_KEY, PROTOCOL_VERSION } from '../protocol/constants';
import type { Cell, ICodeCellModel } from '@jupyterlab/cells';
import {
  Binding,
  BindingChanges,
  FrontendMessage,
  ICompletion,
  IEditMessage,
  IPreview,
  IReviewedEdit,
  IRewrite,
  IRunCellEdit
} from '../protocol/messages';
import { cleanBinding, parseKernelMessage } from '../protocol/parse';
import { changesBar, review, StepChoice, stepConsent } from '../cells/review';
import { MODEL_TAG } from '../cells/tags';
import { applyEdit, checkEdit, IEditableNotebook, IEditOutcome } from './edits';
import { flashCell } from './flash';
import { IChange, Journal } from './journal';
import { Context, KernelLink } from './link';
import { PendingRequests, requestId } from './requests';
import { IWatchedNotebook, ShownCells } from './shown';
import { withBinding } from './state';

/** How a cell of the model's is run in agent mode: the notebook's own run (`reply/insert.ts` `runCell`, set as the
 * plugins start; kept out of this module's imports so its units run without JupyterLab's notebook package). */
let cellRunner: ((panel: NotebookPanel, cell: Cell) => Promise<void>) | null = null;
/** Jupyter's tag for a cell expected to raise: Run All goes on past it. */
const RAISES = 'raises-exception';
export function setCellRunner(run: typeof cellRunner): void {
  cellRunner = run;
}

/** The kernel hears of cell changes at most this often (and at once before a prompt cell runs). */
export const CELLS_DELAY_MS = 500;
/** How long a dry run may take. */
export const PREVIEW_TIMEOUT_MS = 60_000;
export const COMPLETION_TIMEOUT_MS = 20_000;

export class BoopChannel extends KernelLink {
  constructor(context: Context) {
    super(context);
    this._shown = new ShownCells(context.model.sharedModel as unknown as IWatchedNotebook, () => this._cellsChanged());
  }

  /** Whether the notebook used boopiter before: its metadata has a `boopiter` entry. */
  get usedBefore(): boolean {
    return this._context.model.getMetadata(METADATA_KEY) !== undefined;
  }

  /** Record that this notebook uses boopiter (so it loads by itself next time). */
  markUsed(): void {
    if (!this.usedBefore) {
      this._context.model.setMetadata(METADATA_KEY, {});
    }
  }

  /**
   * Load boopiter in the kernel, silently (`LOAD_CODE`: a later `%load_ext boopiter_ext` cell adopts that load
   * quietly); the kernel then opens a comm to us. Its request goes out now, synchronously: it reaches the kernel before
   * any execute_request sent after this call.
   */
  async load(): Promise<void> {
    const kernel = this._kernel;
    if (!kernel || this._state.phase === 'loading' || this._state.phase === 'ready') {
      return;
    }
    let done: Promise<KernelMessage.IExecuteReplyMsg>;
    try {
      done = kernel.requestExecute({ code: LOAD_CODE, silent: true, store_history: false }, true).done;
    } catch (e) {
      this._dispatch({ type: 'load-failed', error: String(e) });
      return;
    }
    await this._loading(kernel, done);
  }

  /**
   * Load boopiter by running `run()`, the notebook's own load cell (`cells/loadcell.ts`): the menu's "Load boopiter"
   * and the first prompt cell record the load in the notebook, so any Jupyter reruns it.
   */
  async loadWith(run: () => Promise<KernelMessage.IExecuteReplyMsg | null>): Promise<void> {
    const kernel = this._kernel;
    if (!kernel || this._state.phase === 'loading') {
      return;
    }
    const reply = run().then(r => {
      if (!r) {
        throw new Error('the notebook has no kernel');
      }
      return r;
    });
    await this._loading(kernel, reply);
  }

  /** Follow a load under way in `kernel` to its end: the menu says "loading…", then what came of it. */
  private async _loading(kernel: Kernel.IKernelConnection, done: Promise<KernelMessage.IExecuteReplyMsg>): Promise<void> {
    this._autoLoaded = true; // loaded once this kernel start: a later `%unload_ext` is not undone by itself
    this._dispatch({ type: 'load' });
    let reply: KernelMessage.IExecuteReplyMsg;
    try {
      reply = await done;
    } catch (e) {
      if (kernel === this._kernel) {
        this._dispatch({ type: 'load-failed', error: String(e) });
      }
      return;
    }
    if (kernel !== this._kernel) {
      return;
    }
    const content = reply.content;
    if (content.status === 'error') {
      const missing = content.ename === 'ModuleNotFoundError';
      const error = missing
        ? "boopiter_ext is not installed in this kernel's Python environment"
        : `${content.ename}: ${content.evalue}`;
      this._dispatch({ type: 'load-failed', error });
      return;
    }
    if (content.status !== 'ok') {
      this._autoLoaded = false; // aborted behind an error: the next prompt loads it
      this._dispatch({ type: 'load-failed', error: '' });
      return;
    }
    this.markUsed();
    this._dispatch({ type: 'loaded' });
    if (!this._comm) {
      // a kernel half that does not open a comm on load still answers a hello
      this._hello(kernel);
    }
  }

  /**
   * The reply view's Stop: the kernel ends the reply streaming in cell `cellId` now (the cell ends without an error).
   * False when it cannot hear it while the cell runs (no comm, or no subshell for it): then interrupt the kernel.
   */
  stop(cellId: string): boolean {
    return this.onSubshell && this._send({ type: 'stop', cell_id: cellId });
  }

  /** The reply view's Ask again: the next run of prompt cell `cellId` asks the model (sent before that run); false if
   * the kernel cannot hear it (no comm). */
  fresh(cellId: string): boolean {
    return this._send({ type: 'fresh', cell_id: cellId });
  }

  /** Send picks; the kernel answers with a state and a binding. */
  pick(changes: BindingChanges): void {
    if (this._send({ type: 'pick', changes })) {
      this._dispatch({ type: 'pick', changes });
    }
  }

  /**
   * The menu's Allow: accept `items`, what the notebook proposes as the menu showed them, for this notebook on this
   * machine; the kernel answers with a state.
   */
  allow(items: string[]): void {
    this._send({ type: 'allow', items });
  }

  /** Ask the kernel to list the models again. */
  refresh(): void {
    this._send({ type: 'refresh' });
  }

  /** A notebook view showing this channel's notebook (edits flash their cell there). */
  addView(panel: NotebookPanel): void {
    if (!this._views.has(panel)) {
      this._views.add(panel);
      panel.disposed.connect(() => this._views.delete(panel));
    }
  }

  /**
   * Tell the kernel the notebook as shown now, if it changed since it last heard (called as a prompt cell is
   * scheduled: the message goes out before the cell's execute_request).
   */
  sendCells(): void {
    if (this._cellsTimer) {
      clearTimeout(this._cellsTimer);
      this._cellsTimer = 0;
    }
    if (this._shown.version === this._sentVersion || !this.connected) {
      return;
    }
    const version = this._shown.version;
    if (this._send({ type: 'notebook', cells: this._shown.snapshot() })) {
      this._sentVersion = version;
    }
  }

  /**
   * A prompt cell is about to run (its execute_request goes out right after this call). The kernel hears the notebook
   * as shown; if it has not answered a hello yet, boopiter is loaded first (once a kernel start, unless a load is under
   * way already: it is ahead in the queue), then the hello goes, on a comm opened for it on the main shell.
   */
  promptScheduled(): void {
    if (this._state.phase === 'ready') {
      this.sendCells();
      return;
    }
    if (!this._autoLoaded && this._state.phase !== 'unsupported') {
      void this.load(); // no race: on the shell channel before the prompt (a restart, a reopened notebook, Run All)
    }
    this._knock();
  }

  /**
   * A prompt cell's dry run: what it would send, and to which model; nothing is sent to a model. The notebook as
   * shown goes first, on the same comm (so the same subshell, in order): an edit just made is in the dry run.
   */
  preview(source: string): Promise<IPreview> {
    if (!this.connected) {
      return Promise.reject(new Error('boopiter is not loaded in this kernel: load it from the brain menu first'));
    }
    return this._ask(this._previews, id => ({ type: 'preview', id, source }));
  }

  /**
   * Ghost text at the cursor of code cell `cellId`: the model's continuation, or '' and why there is none. Asked on
   * the comm (the kernel answers from a thread of its own, so a running cell does not hold it up). A newer request
   * supersedes this one in the kernel, which then answers '' at once.
   */
  complete(cellId: string, prefix: string, suffix: string): Promise<ICompletion> {
    if (!this.connected) {
      return Promise.resolve({ text: '', reason: 'boopiter is not loaded in this kernel' });
    }
    return this._ask(this._completions, id => ({ type: 'complete', id, cell_id: cellId, prefix, suffix }));
  }

  /**
   * The user typed on while a completion was asked for: the kernel stops asking the model for it (a `complete` with
   * nothing around the cursor). Nothing is sent when none is in flight.
   */
  cancelCompletion(cellId: string): void {
    if (this.connected && this._completions.size) {
      this._send({ type: 'complete', id: requestId(), cell_id: cellId, prefix: '', suffix: '' });
    }
  }

  /** Edit this cell: the model's version of cell `cellId` following `instruction`, or '' and why there is none. */
  rewrite(cellId: string, instruction: string, source: string): Promise<IRewrite> {
    if (!this.connected) {
      return Promise.reject(new Error('boopiter is not loaded in this kernel: load it from the brain menu first'));
    }
    return this._ask(this._rewrites, id => ({ type: 'rewrite', id, cell_id: cellId, instruction, source }));
  }

  /**
   * A request the kernel answers with the same id (`pending` waits for it). The notebook as shown goes first, on the
   * same comm (so the same subshell, in order): a cell just edited or hidden is as the user sees it.
   */
  private _ask<T>(pending: PendingRequests<T>, request: (id: string) => FrontendMessage): Promise<T> {
    this.sendCells();
    const id = requestId();
    const answer = pending.wait(id);
    this._send(request(id));
    return answer;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._context.sessionContext.kernelChanged.disconnect(this._onKernelChanged, this);
    this._release();
    this._shown.dispose();
    if (this._cellsTimer) {
      clearTimeout(this._cellsTimer);
    }
    Signal.clearData(this);
  }

  /**
   * The hello: the notebook's binding (null if none), so a fresh kernel answers as this notebook picked, and its
   * cells as shown.
   */
  protected _helloMessage(): FrontendMessage {
    const binding = cleanBinding((this._context.model.getMetadata(METADATA_KEY) as any)?.binding);
    this._sentVersion = this._shown.version;
    return {
      type: 'hello',
      version: PROTOCOL_VERSION,
      binding: Object.keys(binding).length ? binding : null,
      cells: this._shown.snapshot()
    };
  }

  /** The cells changed: the kernel hears of it within `CELLS_DELAY_MS` (a hello carries them anyway). */
  private _cellsChanged(): void {
    if (this._cellsTimer || !this.connected || this._disposed) {
      return;
    }
    this._cellsTimer = setTimeout(() => {
      this._cellsTimer = 0;
      this.sendCells();
    }, CELLS_DELAY_MS);
  }

  protected _onData(comm: Kernel.IComm, data: unknown): void {
    if (comm !== this._comm) {
      return;
    }
    const msg = parseKernelMessage(data);
    if (!msg) {
      return;
    }
    switch (msg.type) {
      case 'binding':
        this._writeBinding(msg.binding);
        break;
      case 'preview':
        this._previews.settle(msg.id, { markdown: msg.markdown, text: msg.text });
        return;
      case 'completion':
        this._completions.settle(msg.id, { text: msg.text, reason: msg.reason });
        return;
      case 'rewrite':
        this._rewrites.settle(msg.id, { source: msg.source, reason: msg.reason });
        return;
      case 'edit':
        void this._edit(comm, msg);
        return;
      case 'edit_cancel':
        this._reviews.get(msg.id)?.withdraw();
        return;
    }
    this._dispatch({ type: 'message', msg });
  }

  /** Carry out (or refuse) an edit, an edit or a deletion once the user accepts it; answer the kernel, show the cell. */
  private async _edit(comm: Kernel.IComm, msg: IEditMessage): Promise<void> {
    let outcome: IEditOutcome & { status?: 'ran' | 'skipped' | 'stopped' };
    try {
      if (msg.op === 'run') {
        outcome = await this._step(msg);
      } else if (msg.op === 'edit' || msg.op === 'delete') {
        const title = msg.op === 'edit' ? 'The model proposes this change to the cell' : 'The model proposes deleting this cell';
        outcome = await this.reviewed(msg, title, msg.op === 'edit' ? 'Accept' : 'Delete the cell');
      } else {
        outcome = applyEdit(this._notebook, msg, this._context.model.readOnly);
        if (outcome.ok && outcome.cellId && msg.op === 'add' && msg.prompt) {
          this._note(msg.prompt, { op: 'add', cellId: outcome.cellId, source: msg.source });
        }
      }
    } catch (e) {
      outcome = { ok: false, message: `refused: the notebook could not make the change (${String(e).slice(0, 200)})` };
    }
    if (!comm.isDisposed) {
      const run = msg.op === 'run' ? { status: outcome.status ?? 'stopped', ...(outcome.cellId ? { cell: outcome.cellId } : {}) } : {};
      comm.send({ type: 'edit_result', id: msg.id, ok: outcome.ok, message: outcome.message, ...run });
    }
    if (outcome.ok && outcome.cellId && msg.op !== 'delete' && msg.op !== 'run') {
      for (const panel of this._views) {
        flashCell(panel, outcome.cellId, msg.id);
      }
    }
  }

  /**
   * Show `req` in its cell as a diff for the user to accept or reject, then make it (checked again: the cell may have
   * changed meanwhile). Noted for the prompt cell `req.prompt`, whose bar undoes it.
   */
  async reviewed(req: IReviewedEdit, title: string, accept: string): Promise<IEditOutcome> {
    const nb = this._notebook;
    const { refusal } = checkEdit(nb, req, this._context.model.readOnly);
    if (refusal) {
      return refusal;
    }
    const cell = this._cellView(req.cell);
    if (!cell) {
      return { ok: false, message: 'refused: the notebook is not open in a view here, so the user cannot review the change' };
    }
    const shown = review({ title, before: req.expect, after: req.op === 'edit' ? req.source : '', accept });
    const input = cell.node.querySelector(':scope > .jp-Cell-inputWrapper');
    cell.node.insertBefore(shown.node, input);
    shown.node.scrollIntoView?.({ block: 'nearest' });
    if (!(await this._pending(req.id, shown, cell))) {
      return { ok: false, message: 'refused: the user rejected the change (do not make it again unless they ask for it)' };
    }
    const now = checkEdit(nb, req, this._context.model.readOnly); // the notebook may have changed while the user looked
    if (now.refusal) {
      return now.refusal;
    }
    const index = now.index;
    const before = nb.cells[index];
    const change: IChange =
      req.op === 'edit'
        ? { op: 'edit', cellId: req.cell, before: req.expect, after: req.source }
        : {
            op: 'delete',
            index,
            afterId: index > 0 ? nb.cells[index - 1].id : null,
            cell: { cell_type: before.cell_type as 'code' | 'markdown', source: before.getSource(), metadata: { ...(before.metadata ?? {}) } }
          };
    const outcome = applyEdit(nb, req, this._context.model.readOnly);
    if (outcome.ok && req.prompt) {
      this._note(req.prompt, change);
    }
    return outcome;
  }

  /**
   * Agent mode: the model's block, shown under the prompt cell as text with Run / Skip / Stop / Run the rest; on Run, a
   * cell below the prompt (after this prompt's earlier ones), tagged as the model's, run as the notebook runs any. Until
   * then nothing is in the notebook, so no Run All can run it. A cell that ran is noted for the prompt's Undo; one that
   * failed is tagged `raises-exception`, so Run All goes on past it to the model's fix.
   */
  private async _step(req: IRunCellEdit): Promise<IEditOutcome & { status: 'ran' | 'skipped' | 'stopped' }> {
    const panel = [...this._views].find(p => p.content.widgets.some(c => c.model.id === req.prompt));
    if (!panel || !req.prompt || !cellRunner || this._context.model.readOnly) {
      return { ok: false, status: 'stopped', message: 'refused: the prompt cell is not shown in an editable notebook here' };
    }
    const nb = panel.content;
    let choice: StepChoice = !req.attend && this._allowed.has(req.agent) ? 'run' : 'stop';
    if (choice !== 'run') {
      const prompt = nb.widgets.find(c => c.model.id === req.prompt)!;
      const ask = stepConsent(req.source, req.attend ? req.reason || 'it may reach outside the kernel' : '');
      prompt.node.append(ask.node);
      ask.node.scrollIntoView?.({ block: 'nearest' });
      choice = await this._pending(req.id, ask, prompt);
    }
    if (choice === 'rest') {
      this._allowed.add(req.agent);
    }
    if (choice === 'skip' || choice === 'stop') {
      return { ok: true, status: choice === 'skip' ? 'skipped' : 'stopped', message: `the user chose ${choice}` };
    }
    const at = Math.max(
      nb.widgets.findIndex(c => c.model.id === req.prompt),
      nb.widgets.findIndex(c => c.model.id === this._lastStep.get(req.prompt!))
    );
    if (at < 0) {
      return { ok: false, status: 'stopped', message: 'refused: the prompt cell is gone' };
    }
    this._notebook.insertCell(at + 1, { cell_type: 'code', source: req.source, metadata: { trusted: true, tags: [MODEL_TAG] } });
    const cell = nb.widgets[at + 1];
    const id = cell.model.id;
    this._lastStep.set(req.prompt, id);
    this._note(req.prompt, { op: 'add', cellId: id, source: req.source });
    await cellRunner(panel, cell);
    if (!cell.isDisposed && (cell.model as ICodeCellModel).outputs.toJSON().some(o => o.output_type === 'error')) {
      // on the record as a step that failed: Run All (JupyterLab's, nbclient's) goes on past it to the model's fix
      const tags = (cell.model.getMetadata('tags') as string[] | undefined) ?? [];
      cell.model.setMetadata('tags', [...tags.filter(t => t !== RAISES), RAISES]);
    }
    return { ok: true, status: 'ran', cellId: id, message: `done: ran cell ${id}` };
  }

  /** Wait for the user's answer to `shown` (request `id`): withdrawn when its cell goes, or the kernel does. */
  private async _pending<T>(id: string, shown: { decided: Promise<T>; withdraw(): void }, cell: Cell): Promise<T> {
    this._reviews.set(id, shown);
    const gone = () => shown.withdraw();
    cell.disposed.connect(gone);
    try {
      return await shown.decided;
    } finally {
      this._reviews.delete(id);
      cell.disposed.disconnect(gone);
    }
  }

  protected _kernelGone(): void {
    for (const shown of [...this._reviews.values()]) {
      shown.withdraw();
    }
  }

  /** The first view's widget of cell `id`. */
  private _cellView(id: string): Cell | null {
    for (const panel of this._views) {
      const cell = panel.content.widgets.find(c => c.model.id === id);
      if (cell) {
        return cell;
      }
    }
    return null;
  }

  /** Note a change made for prompt cell `prompt`, and show that cell's Undo bar with the count. */
  private _note(prompt: string, change: IChange): void {
    const count = this._journal.record(prompt, change);
    for (const panel of this._views) {
      const cell = panel.content.widgets.find(c => c.model.id === prompt);
      if (!cell) {
        continue;
      }
      cell.node.querySelector(':scope > .boop-Changes')?.remove();
      cell.node.append(changesBar(count, () => this._journal.undo(this._notebook, prompt)));
    }
  }

  private get _notebook(): IEditableNotebook {
    return this._context.model.sharedModel as unknown as IEditableNotebook;
  }

  /** Save the kernel's binding in the metadata, if that changes it (no binding where there is none is no change). */
  private _writeBinding(binding: Binding): void {
    const model = this._context.model;
    const old = model.getMetadata(METADATA_KEY);
    if (old === undefined && !Object.keys(binding).length) {
      return; // else merely opening a notebook in a kernel with boopiter configured would modify it
    }
    const next = withBinding(old, binding);
    if (!JSONExt.deepEqual((old ?? null) as any, next as any)) {
      model.setMetadata(METADATA_KEY, next);
    }
  }

  private _shown: ShownCells;
  private _sentVersion = -1;
  private _cellsTimer: ReturnType<typeof setTimeout> | 0 = 0;
  protected _failAll(reason: string): void {
    for (const pending of [this._previews, this._completions, this._rewrites]) {
      pending.failAll(reason);
    }
  }

  protected _previews = new PendingRequests<IPreview>(PREVIEW_TIMEOUT_MS, 'dry run');
  protected _completions = new PendingRequests<ICompletion>(COMPLETION_TIMEOUT_MS, 'completion');
  protected _rewrites = new PendingRequests<IRewrite>(PREVIEW_TIMEOUT_MS * 5, 'new version of the cell');
  private _views = new Set<NotebookPanel>();
  /** Reviews and step questions shown, by request id: `edit_cancel` withdraws them. */
  private _reviews = new Map<string, { withdraw(): void }>();
  /** The last cell each prompt's agent made: the next goes below it. */
  private _lastStep = new Map<string, string>();
  /** The agent loops whose later cells run without asking (the user's "Run the rest of this reply"). */
  private _allowed = new Set<string>();
  private _journal = new Journal();
}
