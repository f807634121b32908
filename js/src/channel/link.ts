/**
 * The kernel side of a notebook's channel to boopiter: which kernel it talks to (reconnected on every kernel start,
 * restart and change), the one live `boopiter` comm, and the state machine (`state.ts`) those events drive.
 * `BoopChannel` (`channel.ts`) builds on it with what goes over the comm.
 *
 * On each kernel connection it registers the `boopiter` comm target (the kernel opens a comm to it
 * when `%load_ext boopiter_ext` runs later) and opens a comm with a `hello` carrying the notebook's
 * binding and its cells. A kernel without boopiter closes that comm at once: the menu then offers "Load
 * boopiter", and a notebook that used boopiter before (a `boopiter` entry in its metadata) loads it by itself.
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
import { INotebookModel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONObject } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import { COMM_TARGET } from '../protocol/constants';
import { FrontendMessage } from '../protocol/messages';
import { ChannelEvent, ChannelState, INITIAL, reduce } from './state';
import { subshellReady } from './subshell';

/** The execution states only a kernel process publishes (with its own session). */
const KERNEL_STATES = new Set(['starting', 'busy', 'idle']);

export type Context = DocumentRegistry.IContext<INotebookModel>;

export abstract class KernelLink implements IDisposable {
  constructor(context: Context) {
    this._context = context;
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
  abstract get usedBefore(): boolean;

  /** Load boopiter in the kernel; the kernel then opens a comm to us. */
  abstract load(): Promise<void>;

  /** Whether boopiter answers on this channel now (a live comm). */
  get connected(): boolean {
    return !!this._comm && !this._comm.isDisposed;
  }

  /** Whether the live comm's messages go over a subshell: the kernel reads them while a cell runs. */
  get onSubshell(): boolean {
    const comm = this._comm as (Kernel.IComm & { subshellId?: string | null }) | null;
    return this.connected && this._held === null && !!comm?.subshellId;
  }

  abstract dispose(): void;

  /** Send `msg` on the live comm (held, in order, until its subshell exists); false if there is none. */
  protected _send(msg: FrontendMessage): boolean {
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

  protected _dispatch(e: ChannelEvent): void {
    const next = reduce(this._state, e);
    if (next !== this._state) {
      this._state = next;
      this._stateChanged.emit(next);
    }
  }

  protected _onKernelChanged(_: unknown, args: { newValue: Kernel.IKernelConnection | null }): void {
    this._connect(args.newValue);
  }

  /** The kernel that asked for anything pending (a review, a step) is gone: subclasses withdraw it. */
  protected _kernelGone(): void {
    // nothing pending here
  }

  /** Stop listening to the current kernel (its comm closed, if it is still open). */
  protected _release(): void {
    const kernel = this._kernel;
    const comm = this._comm;
    this._comm = null;
    this._held = null;
    this._knocking = null;
    this._failAll('the kernel went away');
    this._kernelGone();
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
      this._failAll('the kernel died');
      this._kernelGone();
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
    this._failAll('the kernel restarted');
    this._kernelGone();
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

  protected _hello(kernel: Kernel.IKernelConnection): void {
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
  protected _knock(): void {
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
    this._failAll('boopiter closed its channel');
    this._dispatch({ type: 'closed' });
    // a notebook that used boopiter before loads it by itself, once per kernel start
    if (this.usedBefore && !this._autoLoaded && this._kernel) {
      this._autoLoaded = true;
      void this.load();
    }
  }

  /** The hello: what the kernel hears first on every comm. */
  protected abstract _helloMessage(): FrontendMessage;

  /** `data` arrived on `comm`. */
  protected abstract _onData(comm: Kernel.IComm, data: unknown): void;

  /** Fail every request waiting for the kernel's answer on the comm (it went away, restarted, or closed the channel). */
  protected abstract _failAll(reason: string): void;

  protected _context: Context;
  protected _kernel: Kernel.IKernelConnection | null = null;
  protected _comm: Kernel.IComm | null = null;
  /** Messages for `_comm` waiting for its subshell; null once they go straight out. */
  private _held: FrontendMessage[] | null = null;
  /** A comm whose hello went on the main shell ahead of a prompt (`promptScheduled`), until the kernel answers. */
  private _knocking: Kernel.IComm | null = null;
  /** The kernel process's session, from its last message ('' until one arrives). */
  private _session = '';
  protected _state: ChannelState = INITIAL;
  private _stateChanged = new Signal<this, ChannelState>(this);
  private _needHello = false;
  protected _autoLoaded = false;
  protected _disposed = false;
}
