import { Signal } from '@lumino/signaling';
import { describe, expect, it, vi } from 'vitest';
import type { Kernel } from '@jupyterlab/services';
import { BoopChannel } from '../../src/channel/channel';
import { fakeContext, fakeKernel } from './context';
import { SUBSHELL_WAIT_MS, subshellReady } from '../../src/channel/subshell';

function stubs(supports: boolean, mode = 'perCommTarget') {
  let start!: () => void;
  const started = new Promise<void>(resolve => (start = resolve));
  const kernel = { info: Promise.resolve({}), supportsSubshells: supports } as unknown as Kernel.IKernelConnection;
  const comm = { commsOverSubshells: mode, subshellStarted: started } as unknown as Kernel.IComm;
  return { kernel, comm, start };
}

async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 10; i++) {
    await Promise.resolve();
  }
  return done;
}

describe('subshellReady', () => {
  it("waits for the comm's subshell when the kernel has subshells", async () => {
    const { kernel, comm, start } = stubs(true);
    const ready = subshellReady(kernel, comm);
    expect(await settled(ready)).toBe(false); // a message now would go on the main shell, behind a Run All
    start();
    expect(await settled(ready)).toBe(true);
  });

  it('does not wait where no subshell will start', async () => {
    expect(await settled(subshellReady(stubs(false).kernel, stubs(false).comm))).toBe(true);
    const off = stubs(true, 'disabled');
    expect(await settled(subshellReady(off.kernel, off.comm))).toBe(true);
    const old = { commsOverSubshells: undefined } as unknown as Kernel.IComm; // a JupyterLab before comm subshells
    expect(await settled(subshellReady(stubs(true).kernel, old))).toBe(true);
  });

  it('gives up waiting after SUBSHELL_WAIT_MS', async () => {
    vi.useFakeTimers();
    try {
      const { kernel, comm } = stubs(true);
      const ready = subshellReady(kernel, comm);
      expect(await settled(ready)).toBe(false);
      await vi.advanceTimersByTimeAsync(SUBSHELL_WAIT_MS);
      expect(await settled(ready)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});

/** A comm of the fake kernel: what goes out on it lands on the shared wire, in order. */
class CommStub {
  constructor(
    readonly commId: string,
    private wire: string[]
  ) {}
  isDisposed = false;
  onMsg: ((msg: unknown) => void) | null = null;
  onClose: ((msg: unknown) => void) | null = null;
  open(data: { type: string }): void {
    this.wire.push(`open ${this.commId} ${data.type}`);
  }
  send(data: { type: string }): void {
    this.wire.push(`send ${this.commId} ${data.type}`);
  }
  close(): void {
    this.wire.push(`close ${this.commId}`);
    this.closed();
  }
  /** The kernel answers on it. */
  answer(data: unknown): void {
    this.onMsg?.({ content: { data } });
  }
  /** The kernel closed it (or it was closed here). */
  closed(): void {
    if (!this.isDisposed) {
      this.isDisposed = true;
      this.onClose?.({});
    }
  }
}

/** A notebook's context on a Python kernel that has no boopiter yet: comms, the comm target, the wire. */
function fakeNotebook() {
  const wire: string[] = [];
  const comms: CommStub[] = [];
  const replies: ((status: string) => void)[] = [];
  let target: ((comm: CommStub, msg: unknown) => void) | null = null;
  const kernel = fakeKernel({
    registerCommTarget: (_: string, cb: typeof target) => (target = cb),
    createComm: () => {
      const comm = new CommStub(`c${comms.length + 1}`, wire);
      comms.push(comm);
      return comm;
    },
    /** An execute_request goes on the wire (the silent load: `execute silent`); its reply comes when `replies` says. */
    requestExecute: (content: { silent?: boolean }) => {
      wire.push(`execute${content.silent ? ' silent' : ''}`);
      return { done: new Promise(resolve => replies.push(status => resolve({ content: { status } }))) };
    },
    /** `%load_ext boopiter_ext` ran: the kernel opens its comm to the frontend. */
    announce(): CommStub {
      const comm = new CommStub('announce', wire);
      target!(comm, { content: { data: { type: 'announce', version: 1 } } });
      return comm;
    }
  });
  const notebook = { cells: [], changed: new Signal<unknown, unknown>({}) };
  const metadata: { [k: string]: unknown } = {};
  const context = fakeContext(notebook, kernel, metadata);
  // the kernel's signals come from the kernel itself, as the channel checks
  kernel.statusChanged = new Signal<unknown, string>(kernel);
  kernel.anyMessage = new Signal<unknown, unknown>(kernel);
  const channel = new BoopChannel(context as any);
  return { channel, kernel, comms, wire, replies, metadata };
}

const flush = () => new Promise<void>(resolve => setTimeout(resolve, 0));
const STATE = { type: 'state', version: 1, state: {} };

describe('BoopChannel before a prompt runs', () => {
  it('says hello on the main shell at once while the kernel has not answered one, and keeps that comm once it does', async () => {
    const { channel, kernel, comms, wire } = fakeNotebook();
    await flush();
    expect(wire).toEqual(['open c1 hello']); // on connecting
    comms[0].closed(); // no boopiter in the kernel yet
    expect(channel.state.phase).toBe('absent');

    channel.promptScheduled(); // Run All: `%load_ext boopiter_ext` is queued above the prompt
    expect(wire.slice(1)).toEqual(['execute silent', 'open c2 hello']); // now: before the prompt's execute_request
    channel.promptScheduled(); // a later prompt of the same Run All
    expect(comms.length).toBe(2);

    const announce = kernel.announce(); // the %load_ext ran
    await flush();
    comms[1].answer(STATE); // the kernel read the knock's hello, before the prompt
    await flush();
    expect(channel.state.phase).toBe('ready');
    expect(channel.connected).toBe(true);
    expect(announce.isDisposed).toBe(true); // one comm per notebook view: the knock's
    expect(wire.slice(3)).toEqual(['send announce hello', 'close announce']);

    const sent = wire.length;
    channel.promptScheduled(); // answered: no more hellos
    expect(wire.length).toBe(sent);
  });

  it('changes nothing when the kernel turns the knock away, and knocks again for the next prompt', async () => {
    const { channel, comms, wire, replies } = fakeNotebook();
    await flush();
    comms[0].closed();
    channel.promptScheduled();
    comms[1].closed(); // boopiter still not loaded when the kernel read it
    replies[0]('aborted'); // nor loaded: its load was aborted too
    await flush();
    expect([channel.state.phase, channel.connected]).toEqual(['absent', false]);
    channel.promptScheduled();
    expect(wire.at(-1)).toBe('open c3 hello');
  });

  it('loads boopiter first, silently, once a kernel start, and again after a load that was aborted', async () => {
    const { channel, kernel, comms, wire, replies, metadata } = fakeNotebook();
    await flush();
    comms[0].closed(); // a reopened notebook (or a restart): no boopiter in the kernel
    channel.promptScheduled(); // the prompt's execute_request goes out right after: the load is ahead of it
    expect(wire.slice(1)).toEqual(['execute silent', 'open c2 hello']);
    expect(channel.state.phase).toBe('loading');
    channel.promptScheduled(); // a second prompt of the same run: the load under way is ahead of it too
    expect(wire.filter(w => w.startsWith('execute')).length).toBe(1);
    replies[0]('aborted'); // a cell above failed: the kernel aborted everything queued
    await flush();
    expect([channel.state.phase, channel.state.error]).toEqual(['absent', '']);
    channel.promptScheduled(); // the next run loads again
    expect(wire.filter(w => w.startsWith('execute')).length).toBe(2);
    replies[1]('ok');
    kernel.announce();
    await flush();
    expect(metadata.boopiter).toEqual({}); // used: it loads by itself after the next restart
    kernel.status = 'restarting';
    kernel.statusChanged.emit('restarting'); // a restart: loaded once more, before the first prompt
    channel.promptScheduled();
    expect(wire.filter(w => w.startsWith('execute')).length).toBe(3);
  });
});

describe('the reply view\'s Stop', () => {
  it('goes to the kernel only on a comm that runs over a subshell', async () => {
    const { channel, comms, wire } = fakeNotebook();
    await flush();
    expect(channel.stop('cell-1')).toBe(false); // no answer yet: interrupt the kernel instead
    comms[0].answer(STATE);
    await flush();
    expect(channel.stop('cell-1')).toBe(false); // a comm on the main shell would wait behind the running cell
    (comms[0] as unknown as { subshellId: string }).subshellId = 'sub-1';
    expect(channel.stop('cell-1')).toBe(true);
    expect(wire.at(-1)).toBe('send c1 stop');
  });
});

describe('ghost text', () => {
  it('asks on the comm, and a keystroke while one is asked stops it (nothing is sent when none is)', async () => {
    const { channel, comms, wire } = fakeNotebook();
    await flush();
    comms[0].answer(STATE);
    await flush();
    const sent: { id: string; prefix: string }[] = [];
    const send = comms[0].send.bind(comms[0]);
    comms[0].send = (data: any) => {
      sent.push(data);
      send(data);
    };
    channel.cancelCompletion('cell-1');
    expect(wire.filter(w => w.includes('complete'))).toEqual([]); // none in flight: no message
    const asked = channel.complete('cell-1', 'x = ', '');
    expect(wire.at(-1)).toBe('send c1 complete');
    channel.cancelCompletion('cell-1');
    expect(wire.filter(w => w.includes('complete'))).toEqual(['send c1 complete', 'send c1 complete']);
    expect(sent.at(-1)).toMatchObject({ type: 'complete', cell_id: 'cell-1', prefix: '', suffix: '' });
    const id = sent.find(m => m.prefix === 'x = ')!.id;
    comms[0].answer({ type: 'completion', id, text: '', reason: 'cancelled' });
    expect(await asked).toEqual({ text: '', reason: 'cancelled' });
  });
});
