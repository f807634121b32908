/**
 * The comm channel to boopiter in a notebook's kernel: one per document context (views of the same
 * notebook share it), reconnected on every kernel start, restart and change.
 *
 * On each kernel connection it registers the `boopiter` comm target (the kernel opens a comm to it
 * when `%load_ext boopiter_ext` runs later) and opens a comm with a `hello` carrying the notebook's
 * binding. A kernel without boopiter closes that comm at once: the menu then offers "Load boopiter",
 * and a notebook that used boopiter before (a `boopiter` entry in its metadata) loads it by itself.
 */

import { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONExt, JSONObject, Token } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import { ChannelEvent, ChannelState, INITIAL, reduce, withBinding } from './channelstate';
import {
  Binding,
  BindingChanges,
  cleanBinding,
  COMM_TARGET,
  FrontendMessage,
  LOAD_CODE,
  METADATA_KEY,
  parseKernelMessage,
  PROTOCOL_VERSION
} from './protocol';

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

  /** Run `%load_ext boopiter_ext` in the kernel, silently; the kernel then opens a comm to us. */
  async load(): Promise<void> {
    const kernel = this._kernel;
    if (!kernel || this._state.phase === 'loading' || this._state.phase === 'ready') {
      return;
    }
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

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._context.sessionContext.kernelChanged.disconnect(this._onKernelChanged, this);
    this._release();
    Signal.clearData(this);
  }

  private _send(msg: FrontendMessage): boolean {
    const comm = this._comm;
    if (!comm || comm.isDisposed) {
      return false;
    }
    comm.send(msg as unknown as JSONObject);
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
    if (comm && !comm.isDisposed && kernel && !kernel.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone
      }
    }
    if (kernel && !kernel.isDisposed) {
      kernel.statusChanged.disconnect(this._onStatus, this);
      kernel.removeCommTarget(COMM_TARGET, this._onCommOpen);
    }
    this._kernel = null;
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
    this._hello(kernel);
  }

  private _onStatus(kernel: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (kernel !== this._kernel) {
      return;
    }
    if (status === 'restarting' || status === 'autorestarting') {
      // the restart disposes every comm without a close message; boopiter is gone unless configured
      this._comm = null;
      this._autoLoaded = false;
      this._needHello = true;
      this._dispatch({ type: 'kernel', present: true });
    } else if (status === 'dead') {
      this._comm = null;
      this._dispatch({ type: 'kernel', present: false });
    } else if (status === 'idle' && this._needHello) {
      this._needHello = false;
      this._hello(kernel);
    }
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
        const comm = kernel.createComm(COMM_TARGET);
        this._adopt(comm);
        this._dispatch({ type: 'hello' });
        comm.open(this._helloMessage() as unknown as JSONObject);
      },
      () => undefined
    );
  }

  /** Make `comm` the live one (an older one is closed: one comm per notebook view). */
  private _adopt(comm: Kernel.IComm): void {
    const old = this._comm;
    this._comm = comm;
    if (old && old !== comm && !old.isDisposed) {
      try {
        old.close();
      } catch {
        // already closed
      }
    }
    comm.onMsg = msg => this._onData(comm, msg.content.data);
    comm.onClose = () => this._onClose(comm);
  }

  /** The hello: the notebook's binding (null if none), so a fresh kernel answers as this notebook picked. */
  private _helloMessage(): FrontendMessage {
    const binding = cleanBinding((this._context.model.getMetadata(METADATA_KEY) as any)?.binding);
    return { type: 'hello', version: PROTOCOL_VERSION, binding: Object.keys(binding).length ? binding : null };
  }

  private _onCommOpen = (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void => {
    if (this._disposed) {
      comm.close();
      return;
    }
    // the kernel loaded boopiter (`%load_ext`, or ipython_config at start): its open data is the first state;
    // the hello goes to it as a message, so it learns the notebook's binding
    this._needHello = false;
    this._adopt(comm);
    this._onData(comm, msg.content.data);
    this._send(this._helloMessage());
  };

  private _onClose(comm: Kernel.IComm): void {
    if (comm !== this._comm) {
      return;
    }
    this._comm = null;
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
    if (msg.type === 'binding') {
      this._writeBinding(msg.binding);
    }
    this._dispatch({ type: 'message', msg });
  }

  private _writeBinding(binding: Binding): void {
    const model = this._context.model;
    const old = model.getMetadata(METADATA_KEY);
    const next = withBinding(old, binding);
    if (!JSONExt.deepEqual((old ?? null) as any, next as any)) {
      model.setMetadata(METADATA_KEY, next);
    }
  }

  private _context: Context;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  private _state: ChannelState = INITIAL;
  private _stateChanged = new Signal<this, ChannelState>(this);
  private _needHello = false;
  private _autoLoaded = false;
  private _disposed = false;
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
    return channel;
  }

  private _channels = new Map<Context, BoopChannel>();
}
