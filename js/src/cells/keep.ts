/**
 * A prompt cell's saved reply is never cleared before what replaces it exists.
 *
 * JupyterLab clears a cell's outputs as its execution is scheduled. For a prompt cell with a saved reply, the saved
 * outputs come back at once and stay (dimmed while the cell waits) until the kernel sends the run's first display (its
 * reply view); a stream or an error before that goes after them (the magic not found). If the run then ends without a
 * new reply (an interrupt before any token, a server that could not be reached), the saved outputs are put back with
 * the run's error after them. A run aborted by an earlier error sends nothing, so the saved reply simply stays. So a
 * notebook never shows, or autosaves, less than it had. A reply that streams on after its cell ended (the kernel's
 * background reply) is judged when it ends, not when the cell does: until then its view stands.
 *
 * Outputs put back keep the trust they had: a notebook that was not trusted does not become trusted by a rerun.
 * The decisions are pure functions (`hasNewReply`, `restored`), unit-tested; `keepSavedReplies` does it in the page.
 */

import type { CodeCell } from '@jupyterlab/cells';
import type { IOutput } from '@jupyterlab/nbformat';
import { KernelMessage } from '@jupyterlab/services';
import { REPLY_MIME, SETTINGS_MIME, WIDGET_MIME } from '../protocol/constants';

/** While a prompt cell waits with its saved outputs shown: they are about to be replaced, or to stay. */
export const QUEUED_CLASS = 'boop-mod-queued';

/**
 * The kernel's messages that replace what was saved: the first display (a reply's view) or a clearing. A stream or an
 * error before one (a warning, the magic not found) goes after the saved outputs, where it stays if nothing replaces
 * them: the saved reply is on screen every moment of a run that brings no new one.
 */
const REPLACING = new Set(['display_data', 'execute_result', 'clear_output']);

/** What boopiter's own renderers draw (all safe, ranked above the rest of a bundle). */
const OWN_MIMES = [REPLY_MIME, SETTINGS_MIME, WIDGET_MIME];

type Output = IOutput;

function data(o: Output): { [k: string]: unknown } | null {
  const d = (o as { data?: unknown }).data;
  return typeof d === 'object' && d !== null && !Array.isArray(d) ? (d as { [k: string]: unknown }) : null;
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : Array.isArray(v) ? v.filter(x => typeof x === 'string').join('') : '';
}

/** The reply data of an output, if it has some. */
function replyData(o: Output): { [k: string]: unknown } | null {
  const r = data(o)?.[REPLY_MIME];
  return typeof r === 'object' && r !== null && !Array.isArray(r) ? (r as { [k: string]: unknown }) : null;
}

/**
 * Whether an output is a reply with something in it: a finished reply (reused and kept ones too), any text or
 * reasoning that arrived, a tool round or the tool loop's summary. An empty view of a reply that failed before its
 * first token is not one.
 */
export function isNewReply(o: Output): boolean {
  const r = replyData(o);
  if (!r) {
    return false;
  }
  if (r.kind !== 'reply') {
    return true; // a tool round ran, or the loop ended: that happened
  }
  const blocks = Array.isArray(r.blocks) ? r.blocks.map(text) : [];
  return r.status === 'done' || blocks.some(b => b.trim()) || !!text(r.markdown).trim() || !!text(r.reasoning).trim();
}

/** Whether `outputs` hold a reply that is still on its way and has nothing to show yet (waiting for its first token). */
export function awaitsReply(outputs: readonly Output[]): boolean {
  return outputs.some(o => {
    const r = replyData(o);
    return !!r && r.kind === 'reply' && (r.status === 'waiting' || r.status === 'streaming') && !isNewReply(o);
  });
}

/** Whether `outputs` hold a reply worth keeping. */
export function hasNewReply(outputs: readonly Output[]): boolean {
  return outputs.some(isNewReply);
}

/**
 * The saved outputs worth putting back: the cell's text (streams, errors) and what boopiter's own renderers draw.
 * Another output type in a prompt cell came from elsewhere: the rerun clears it, as JupyterLab would.
 */
export function keepable(saved: readonly Output[]): Output[] {
  return saved.filter(o => {
    if (o.output_type === 'stream' || o.output_type === 'error') {
      return true;
    }
    const d = data(o);
    return !!d && OWN_MIMES.some(m => m in d);
  });
}

/**
 * The cell's outputs once a run ended: null when the run brought a new reply (its outputs stand), else the saved
 * outputs, then what the run said that is not an empty reply view (its error, its warnings).
 */
export function restored(saved: readonly Output[], run: readonly Output[]): Output[] | null {
  if (hasNewReply(run)) {
    return null;
  }
  return [...keepable(saved), ...run.filter(o => !replyData(o))];
}

/**
 * Keep `cell`'s saved reply through the run that is being scheduled (call it from `executionScheduled`, before
 * JupyterLab clears the outputs and sends the request).
 */
export function keepSavedReplies(cell: CodeCell): void {
  const saved = keepable(cell.model.outputs.toJSON());
  if (!hasNewReply(saved)) {
    return; // nothing saved to lose
  }
  const trusted = cell.model.trusted;
  // JupyterLab clears the outputs and sends the request right after this signal, in the same task
  queueMicrotask(() => {
    const area = cell.outputArea;
    const future = area?.future;
    if (cell.isDisposed || !future || future.isDisposed || area.model.length) {
      return;
    }
    let replaced = false;
    const show = (outputs: Output[]) => {
      area.model.clear();
      if (!trusted) {
        cell.model.trusted = false; // as it was: what a file held stays untrusted
        cell.model.sharedModel.setMetadata('trusted', false);
      }
      area.model.fromJSON(outputs);
    };
    show(saved);
    cell.addClass(QUEUED_CLASS);
    future.registerMessageHook((msg: KernelMessage.IIOPubMessage) => {
      if (!replaced && REPLACING.has(msg.header.msg_type) && !cell.isDisposed) {
        replaced = true; // the run's first display: from here the cell shows the run
        cell.removeClass(QUEUED_CLASS);
        const before = area.model.toJSON().slice(saved.length); // what the run printed after the saved outputs
        area.model.clear();
        cell.model.trusted = true; // what the kernel sends now is this run's, as for any cell
        area.model.fromJSON(before);
      }
      return true;
    });
    const settle = (): boolean => {
      if (cell.isDisposed || area.future !== future) {
        return true; // the cell runs again: that run decides
      }
      const run = area.model.toJSON();
      if (awaitsReply(run) && !hasNewReply(run)) {
        return false; // the reply streams on after the cell ended: judged once it has text or has ended
      }
      const back = restored(saved, run);
      if (back) {
        show(back);
      }
      return true;
    };
    const end = () => {
      if (cell.isDisposed) {
        return;
      }
      cell.removeClass(QUEUED_CLASS);
      if (!replaced || area.future !== future) {
        return; // no display came (aborted, or only an error line after the saved reply), or the cell runs again
      }
      if (settle()) {
        return;
      }
      const later = () => {
        if (settle()) {
          area.model.changed.disconnect(later);
        }
      };
      area.model.changed.connect(later);
    };
    future.done.then(end, end);
  });
}
