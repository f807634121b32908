/**
 * Ghost text in code cells, through JupyterLab's own inline completer (its accept, cycle and dismiss keys, its
 * settings): the provider asks the kernel (`BoopChannel.complete`), which answers from a thread of its own, so the
 * ghost text comes while a cell runs. The completer waits `DEBOUNCE_MS` after the last keystroke; only the newest
 * request's answer is shown (the kernel cancels the one it superseded). Prompt cells and Markdown get none.
 */

import type { CompletionHandler, IInlineCompletionContext, IInlineCompletionList, IInlineCompletionProvider } from '@jupyterlab/completer';
import type { Widget } from '@lumino/widgets';
import { isPromptSource } from '../cells/prompt';
import type { ICompletion } from '../protocol/messages';

export const PROVIDER_ID = 'boopiter';
/** Milliseconds after the last keystroke before a completion is asked for (the completer's `debouncerDelay`). */
export const DEBOUNCE_MS = 250;

/** Ask the kernel for ghost text in `widget`'s active cell, given its text before and after the cursor; null when that
 * is no code cell of a notebook. */
export type Ask = (widget: Widget, prefix: string, suffix: string) => Promise<ICompletion> | null;

export class BoopInlineProvider implements IInlineCompletionProvider {
  readonly identifier = PROVIDER_ID;
  readonly name = 'boopiter';
  /** The completer's defaults for this provider (the user's settings override them): on, debounced. */
  readonly schema = { default: { enabled: true, debouncerDelay: DEBOUNCE_MS, timeout: 20_000 } };

  constructor(private _ask: Ask) {}

  async fetch(request: CompletionHandler.IRequest, context: IInlineCompletionContext): Promise<IInlineCompletionList> {
    const ticket = ++this._latest;
    const prefix = request.text.slice(0, request.offset);
    const asked = isPromptSource(request.text) || !prefix.trim() ? null : this._ask(context.widget, prefix, request.text.slice(request.offset));
    if (!asked) {
      return { items: [] };
    }
    let answer: ICompletion;
    try {
      answer = await asked;
    } catch {
      return { items: [] }; // the kernel went, or did not answer in time: no ghost text, nothing else
    }
    return ticket === this._latest && answer.text ? { items: [{ insertText: answer.text }] } : { items: [] };
  }

  private _latest = 0;
}
