/**
 * The notebook context a `BoopChannel` is made with, as far as it reads it: the shared model and its metadata, and a
 * session whose kernel is `kernel` (`fakeKernel`). Shared by the channel's tests and the protocol's wire test.
 */

import { Signal } from '@lumino/signaling';

export function fakeContext(notebook: unknown, kernel: unknown, metadata: { [k: string]: unknown }) {
  return {
    model: {
      sharedModel: notebook,
      readOnly: false,
      getMetadata: (k: string) => metadata[k],
      setMetadata: (k: string, v: unknown) => (metadata[k] = v)
    },
    sessionContext: { kernelChanged: new Signal<unknown, unknown>({}), ready: Promise.resolve(), session: { kernel } }
  };
}

/** An idle Python kernel as the channel reads it, with `parts` (its comm target, `createComm`, ...) added or replaced. */
export function fakeKernel<T extends object>(parts: T) {
  return {
    info: Promise.resolve({ language_info: { name: 'python' } }),
    status: 'idle',
    isDisposed: false,
    statusChanged: new Signal<unknown, string>({}),
    anyMessage: new Signal<unknown, unknown>({}),
    registerCommTarget: (..._: unknown[]): unknown => undefined,
    removeCommTarget: () => undefined,
    ...parts
  };
}
