/**
 * The notebook context a `BoopChannel` is made with, as far as it reads it: the shared model and its metadata, and a
 * session whose kernel is `kernel`. Shared by the channel's tests and the protocol's wire test.
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
