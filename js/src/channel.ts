/**
 * The comm channel to boopiter in a notebook's kernel: one per document context (views of the same
 * notebook share it), reconnected on every kernel start, restart and change.
 *
 * On each kernel connection it registers the `boopiter` comm target (the kernel opens a comm to it
 * when `%load_ext boopiter_ext` runs later) and opens a comm with a `hello` carrying the notebook's
 * binding and its cells. A kernel without boopiter closes that comm at once: the menu then offers "Load
 * boopiter", and a notebook that used boopiter before (a `boopiter` entry in its metadata) loads it by itself.
 *
 * While the comm is open it keeps the kernel's view of the notebook current (`notebook` messages, at most one
 * per `CELLS_DELAY_MS`, and one at once before a prompt cell runs), asks for dry runs, and carries out the
 * edits the model's notebook tools ask for (one undoable step each, answered with `edit_result`).
 *
 * Every message on a comm, its open and hello first, waits until JupyterLab has started the comm's subshell (where
 * the kernel handles it while cells run): sent before, it would go on the main shell, behind a whole Run All.
 * One hello goes on the main shell on purpose: a prompt cell scheduled before the kernel answered a hello (a Run All
 * that loads boopiter a few cells above it) opens a comm with a hello at once, so it reaches the kernel right before
 * the prompt's execute_request, after that `%load_ext`: the prompt runs with the extension known (`promptScheduled`).
 * A kernel restarted behind the page's back (the REST API, another client) shows as a new kernel session in its
 * messages: the channel then starts over as after a restart.
 */

import { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONExt, JSONObject, Token } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import { ChannelEvent, ChannelState, INITIAL, reduce, withBinding } from './channelstate';
import { applyEdit, IEditableNotebook, IEditOutcome } from './edits';
import {
  Binding,
  BindingChanges,
  cleanBinding,
  COMM_TARGET,
  FrontendMessage,
  IEditMessage,
  IPreview,
  LOAD_CODE,
  METADATA_KEY,
  parseKernelMessage,
  PROTOCOL_VERSION
} from './protocol';
import { PendingRequests, requestId } from './requests';
import { IWatchedNotebook, ShownCells } from './shown';

/** The kernel hears of cell changes at most this often (and at once before a prompt cell runs). */
export const CELLS_DELAY_MS = 500;
/** How long a dry run may take. */
export const PREVIEW_TIMEOUT_MS = 60_000;
/** How long a changed cell is highlighted. */
export const FLASH_MS = 1600;
/** The execution states only a kernel process publishes (with its own session). */
const KERNEL_STATES = new Set(['starting', 'busy', 'idle']);
/** How long messages wait for a comm's subshell before they go on the main shell anyway. */
export const SUBSHELL_WAIT_MS = 5000;

export interface IBoopChannels {
  /** The channel of the notebook shown in `panel` (created on first use). */
  get(panel: NotebookPanel): BoopChannel;
}

export const IBoopChannels = new Token<IBoopChannels>(
  'boopiter-ext:IBoopChannels',
  "The comm channel to boopiter in each notebook's kernel."
);

type Context = DocumentRegistry.IContext<INotebookModel>;

export class BoopChannel implements IDisposable {
  constructor(context: Context) {
    this._context = context;
    this._shown = new ShownCells(context.model.sharedModel as unknown as IWatchedNotebook, () => this._cellsChanged());
    const sc = context.sessionContext;
    sc.kernelChanged.connect(this._onKernelChanged, this);
    void sc.ready.then(() => this._connect(sc.session?.kernel ?? null));
  }

  get state(): ChannelState {
    return this._state;
  }

  /** Emits the new state after every change. */
  get stateChanged(): ISignal<this, ChannelState> {
    return this._stateChanged;
  }

  get isDisposed(): boolean {
    return this._disposed;
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
   * quietly); the kernel then opens a comm to us.
   */
  async load(): Promise<void> {
    const kernel = this._kernel;
    if (!kernel || this._state.phase === 'loading' || this._state.phase === 'ready') {
      return;
    }
    this._autoLoaded = true; // loaded once this kernel start: a later `%unload_ext` is not undone by itself
    this._dispatch({ type: 'load' });
    let reply: KernelMessage.IExecuteReplyMsg;
    try {
      reply = await kernel.requestExecute({ code: LOAD_CODE, silent: true, store_history: false }, true).done;
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
      this._dispatch({ type: 'load-failed', error: `loading stopped (${content.status})` });
      return;
    }
    this.markUsed();
    this._dispatch({ type: 'loaded' });
    if (!this._comm) {
      // a kernel half that does not open a comm on load still answers a hello
      this._hello(kernel);
    }
  }

  /** Send picks; the kernel answers with a state and a binding. */
  pick(changes: BindingChanges): void {
    if (this._send({ type: 'pick', changes })) {
      this._dispatch({ type: 'pick', changes });
    }
  }

  /** Ask the kernel to list the models again. */
  refresh(): void {
    this._send({ type: 'refresh' });
  }

  /** Whether boopiter answers on this channel now (a live comm). */
  get connected(): boolean {
    return !!this._comm && !this._comm.isDisposed;
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
   * as shown; if it has not answered a hello yet, the hello goes now, on a comm opened for it on the main shell.
   */
  promptScheduled(): void {
    if (this._state.phase === 'ready') {
      this.sendCells();
    } else {
      this._knock();
    }
  }

  /**
   * A prompt cell's dry run: what it would send, and to which model; nothing is sent to a model. The notebook as
   * shown goes first, on the same comm (so the same subshell, in order): an edit just made is in the dry run.
   */
  preview(source: string): Promise<IPreview> {
    if (!this.connected) {
      return Promise.reject(new Error('boopiter is not loaded in this kernel: load it from the brain menu first'));
    }
    this.sendCells();
    const id = requestId();
    const answer = this._previews.wait(id);
    this._send({ type: 'preview', id, source });
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

  /** Send `msg` on the live comm (held, in order, until its subshell exists); false if there is none. */
  private _send(msg: FrontendMessage): boolean {
    const comm = this._comm;
    if (!comm || comm.isDisposed) {
      return false;
    }
    if (this._held) {
      this._held.push(msg);
      return true;
    }
    try {
      comm.send(msg as unknown as JSONObject);
    } catch {
      return false; // the kernel connection went away
    }
    return true;
  }

  private _dispatch(e: ChannelEvent): void {
    const next = reduce(this._state, e);
    if (next !== this._state) {
      this._state = next;
      this._stateChanged.emit(next);
    }
  }

  private _onKernelChanged(_: unknown, args: { newValue: Kernel.IKernelConnection | null }): void {
    this._connect(args.newValue);
  }

  /** Stop listening to the current kernel (its comm closed, if it is still open). */
  private _release(): void {
    const kernel = this._kernel;
    const comm = this._comm;
    this._comm = null;
    this._held = null;
    this._knocking = null;
    this._previews.failAll('the kernel went away');
    if (comm && !comm.isDisposed && kernel && !kernel.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone
      }
    }
    if (kernel && !kernel.isDisposed) {
      kernel.statusChanged.disconnect(this._onStatus, this);
      kernel.anyMessage.disconnect(this._onAnyMessage, this);
      kernel.removeCommTarget(COMM_TARGET, this._onCommOpen);
    }
    this._kernel = null;
    this._session = '';
  }

  private _connect(kernel: Kernel.IKernelConnection | null): void {
    if (this._disposed || kernel === this._kernel) {
      return;
    }
    this._release();
    this._autoLoaded = false;
    if (!kernel) {
      this._dispatch({ type: 'kernel', present: false });
      return;
    }
    this._kernel = kernel;
    this._dispatch({ type: 'kernel', present: true });
    kernel.registerCommTarget(COMM_TARGET, this._onCommOpen);
    kernel.statusChanged.connect(this._onStatus, this);
    kernel.anyMessage.connect(this._onAnyMessage, this);
    this._hello(kernel);
  }

  private _onStatus(kernel: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (kernel !== this._kernel) {
      return;
    }
    if (status === 'restarting' || status === 'autorestarting') {
      // the restart disposes every comm without a close message; boopiter is gone unless configured
      this._restarted();
      this._session = ''; // the new kernel's first message names its session
    } else if (status === 'dead') {
      this._comm = null;
      this._held = null;
      this._knocking = null;
      this._previews.failAll('the kernel died');
      this._dispatch({ type: 'kernel', present: false });
    } else if (status === 'idle' && this._needHello) {
      this._needHello = false;
      this._hello(kernel);
    }
  }

  /** Start over on a restarted kernel: no comm, no pending dry run; the hello goes out once the kernel is idle. */
  private _restarted(): void {
    this._comm = null;
    this._held = null;
    this._knocking = null;
    this._previews.failAll('the kernel restarted');
    this._autoLoaded = false;
    this._needHello = true;
    this._dispatch({ type: 'kernel', present: true });
  }

  /**
   * Every status message from the kernel names the kernel process's session. A new one without a restart status
   * means the kernel was restarted elsewhere (the REST API, another client): JupyterLab then keeps the dead kernel's
   * comms, so ours is dropped here (which also frees its comm-target subshell: a new comm gets one in the new kernel).
   */
  private _onAnyMessage(kernel: Kernel.IKernelConnection, args: Kernel.IAnyMessageArgs): void {
    if (args.direction !== 'recv' || kernel !== this._kernel) {
      return;
    }
    // only the kernel's own busy/idle/starting: the server sends restarting/dead and rate-limit warnings itself
    const msg = args.msg;
    const state = (msg.content as { execution_state?: string }).execution_state;
    if (msg.channel !== 'iopub' || msg.header.msg_type !== 'status' || !state || !KERNEL_STATES.has(state)) {
      return;
    }
    const last = this._session;
    this._session = msg.header.session;
    if (!last || msg.header.session === last || kernel.status === 'restarting') {
      return;
    }
    const comm = this._comm;
    this._restarted();
    if (comm && !comm.isDisposed) {
      comm.dispose(); // not closed: the new kernel never knew it
    }
    // the new kernel is up (it sent this message): say hello now, not on an idle that may never change the status
    this._needHello = false;
    this._hello(kernel);
  }

  private _hello(kernel: Kernel.IKernelConnection): void {
    void kernel.info.then(
      info => {
        if (kernel !== this._kernel || this._disposed) {
          return;
        }
        const language = info.language_info?.name ?? '';
        if (language && language.toLowerCase() !== 'python') {
          this._dispatch({ type: 'unsupported', language });
          return;
        }
        if (this._comm) {
          return; // the kernel opened one already (extension loaded from ipython_config)
        }
        this._adopt(kernel, kernel.createComm(COMM_TARGET), 'open');
        this._dispatch({ type: 'hello' });
      },
      () => undefined
    );
  }

  /**
   * Open a comm with the hello now, on the main shell (its subshell has not started): in the queue right before the
   * prompt's execute_request, behind every cell scheduled earlier. If the kernel takes it (boopiter was loaded by
   * then), its answer makes it the live comm, and the kernel knew of the extension before the prompt ran; if not,
   * the kernel closes it and nothing changes. One at a time: a Run All's later prompts queue behind the first.
   */
  private _knock(): void {
    const kernel = this._kernel;
    if (!kernel || this._knocking || this._disposed || this._state.phase === 'unsupported') {
      return;
    }
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(COMM_TARGET);
      this._knocking = comm;
      comm.onMsg = msg => {
        if (comm === this._knocking && kernel === this._kernel) {
          this._knocking = null;
          this._adopt(kernel, comm, null); // the kernel has the hello: the announce it opened meanwhile is closed
        }
        this._onData(comm, msg.content.data);
      };
      comm.onClose = () => {
        if (comm === this._knocking) {
          this._knocking = null; // boopiter was not loaded when the kernel read it
        }
      };
      comm.open(this._helloMessage() as unknown as JSONObject);
    } catch {
      this._knocking = null; // the kernel connection went away
    }
  }

  /**
   * Make `comm` the live one (an older one is closed: one comm per notebook view). Its first message is the hello,
   * as the comm's open data (`'open'`: a comm we create) or a message (`'send'`: a comm the kernel opened), or none
   * (`null`: the kernel took a knock's); it and whatever is sent meanwhile wait for the comm's subshell.
   */
  private _adopt(kernel: Kernel.IKernelConnection, comm: Kernel.IComm, first: 'open' | 'send' | null): void {
    const old = this._comm;
    this._comm = comm;
    this._held = [];
    if (old && old !== comm && !old.isDisposed) {
      try {
        old.close();
      } catch {
        // already closed
      }
    }
    comm.onMsg = msg => this._onData(comm, msg.content.data);
    comm.onClose = () => this._onClose(comm);
    void subshellReady(kernel, comm).then(() => {
      if (comm !== this._comm || comm.isDisposed || this._disposed) {
        return;
      }
      const held = this._held ?? [];
      this._held = null;
      try {
        // the cells as shown now: held `notebook`s are older
        if (first === 'open') {
          comm.open(this._helloMessage() as unknown as JSONObject);
        } else if (first === 'send') {
          comm.send(this._helloMessage() as unknown as JSONObject);
        }
        for (const msg of held) {
          if (first === null || msg.type !== 'notebook') {
            comm.send(msg as unknown as JSONObject);
          }
        }
      } catch {
        // the kernel connection went away; its status says so
      }
    });
  }

  /**
   * The hello: the notebook's binding (null if none), so a fresh kernel answers as this notebook picked, and its
   * cells as shown.
   */
  private _helloMessage(): FrontendMessage {
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

  private _onCommOpen = (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void => {
    if (this._disposed) {
      comm.close();
      return;
    }
    const kernel = this._kernel;
    if (!kernel) {
      comm.close();
      return;
    }
    // the kernel loaded boopiter (`%load_ext`, or ipython_config at start): its open data is the first state;
    // the hello goes to it as a message, so it learns the notebook's binding; once the comm's subshell exists,
    // or it would wait on the main shell behind the rest of a Run All
    this._needHello = false;
    this._adopt(kernel, comm, 'send');
    this._onData(comm, msg.content.data);
  };

  private _onClose(comm: Kernel.IComm): void {
    if (comm !== this._comm) {
      return;
    }
    this._comm = null;
    this._held = null;
    this._previews.failAll('boopiter closed its channel');
    this._dispatch({ type: 'closed' });
    // a notebook that used boopiter before loads it by itself, once per kernel start
    if (this.usedBefore && !this._autoLoaded && this._kernel) {
      this._autoLoaded = true;
      void this.load();
    }
  }

  private _onData(comm: Kernel.IComm, data: unknown): void {
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
      case 'edit':
        this._edit(comm, msg);
        return;
    }
    this._dispatch({ type: 'message', msg });
  }

  /** Carry out (or refuse) an edit, answer the kernel at once, then show the changed cell. */
  private _edit(comm: Kernel.IComm, msg: IEditMessage): void {
    const model = this._context.model;
    let outcome: IEditOutcome;
    try {
      outcome = applyEdit(model.sharedModel as unknown as IEditableNotebook, msg, model.readOnly);
    } catch (e) {
      outcome = { ok: false, message: `refused: the notebook could not make the change (${String(e).slice(0, 200)})` };
    }
    if (!comm.isDisposed) {
      comm.send({ type: 'edit_result', id: msg.id, ok: outcome.ok, message: outcome.message });
    }
    if (outcome.ok && outcome.cellId) {
      for (const panel of this._views) {
        flashCell(panel, outcome.cellId, msg.id);
      }
    }
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

  private _context: Context;
  private _shown: ShownCells;
  private _sentVersion = -1;
  private _cellsTimer: ReturnType<typeof setTimeout> | 0 = 0;
  private _previews = new PendingRequests<IPreview>(PREVIEW_TIMEOUT_MS, 'dry run');
  private _views = new Set<NotebookPanel>();
  private _kernel: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  /** Messages for `_comm` waiting for its subshell; null once they go straight out. */
  private _held: FrontendMessage[] | null = null;
  /** A comm whose hello went on the main shell ahead of a prompt (`promptScheduled`), until the kernel answers. */
  private _knocking: Kernel.IComm | null = null;
  /** The kernel process's session, from its last message ('' until one arrives). */
  private _session = '';
  private _state: ChannelState = INITIAL;
  private _stateChanged = new Signal<this, ChannelState>(this);
  private _needHello = false;
  private _autoLoaded = false;
  private _disposed = false;
}

/** Scroll `cellId` into view in `panel` (if it is not) and highlight it briefly. */
export function flashCell(panel: NotebookPanel, cellId: string, editId: string): void {
  const nb = panel.content;
  const index = nb.widgets.findIndex(c => c.model.id === cellId);
  if (index < 0) {
    return;
  }
  const cell = nb.widgets[index];
  cell.node.dataset.boopEdit = editId; // stays: which edit last changed this cell (for tests and inspection)
  void Promise.resolve(nb.scrollToItem(index, 'auto')).catch(() => undefined);
  cell.removeClass('boop-mod-flash');
  void cell.node.offsetWidth; // restart the animation when one cell is changed twice in a row
  cell.addClass('boop-mod-flash');
  const timers = flashTimers.get(cell.node);
  if (timers) {
    clearTimeout(timers);
  }
  flashTimers.set(
    cell.node,
    setTimeout(() => {
      flashTimers.delete(cell.node);
      if (!cell.isDisposed) {
        cell.removeClass('boop-mod-flash');
      }
    }, FLASH_MS)
  );
}
const flashTimers = new WeakMap<HTMLElement, ReturnType<typeof setTimeout>>();

/**
 * Resolves once messages on `comm` go where the kernel handles them while cells run: the comm's subshell, which
 * JupyterLab starts (one per comm target) after the comm exists, when the kernel has subshells. Before that a message
 * goes on the main shell, behind every queued execute_request. At most `SUBSHELL_WAIT_MS`.
 */
export async function subshellReady(kernel: Kernel.IKernelConnection, comm: Kernel.IComm): Promise<void> {
  const routed = comm as Kernel.IComm & { subshellStarted?: Promise<void> };
  if (!('subshellStarted' in routed)) {
    return; // a JupyterLab without comm subshells
  }
  try {
    await kernel.info;
  } catch {
    return;
  }
  const supports = (kernel as { supportsSubshells?: boolean }).supportsSubshells;
  if (!supports || String(routed.commsOverSubshells ?? 'disabled') === 'disabled' || !routed.subshellStarted) {
    return; // JupyterLab starts no subshell for this comm
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>(resolve => (timer = setTimeout(resolve, SUBSHELL_WAIT_MS)));
  try {
    await Promise.race([routed.subshellStarted, late]);
  } catch {
    // no subshell: the main shell it is
  } finally {
    clearTimeout(timer);
  }
}

/** The channels of all open notebooks, keyed by document context. */
export class BoopChannels implements IBoopChannels {
  get(panel: NotebookPanel): BoopChannel {
    const context = panel.context;
    let channel = this._channels.get(context);
    if (!channel) {
      channel = new BoopChannel(context);
      this._channels.set(context, channel);
      context.disposed.connect(() => {
        channel!.dispose();
        this._channels.delete(context);
      });
    }
    channel.addView(panel);
    return channel;
  }

  private _channels = new Map<Context, BoopChannel>();
}
