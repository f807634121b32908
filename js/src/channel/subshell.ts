/** Where a comm's messages go: its subshell, once JupyterLab has started it (or the main shell, after a while). */

import { Kernel } from '@jupyterlab/services';

/** How long messages wait for a comm's subshell before they go on the main shell anyway. */
export const SUBSHELL_WAIT_MS = 5000;

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
