/**
 * boopiter's faults (Ollama unreachable, a model not pulled, a stalled reply...) read as prose in their red box: the
 * kernel raises them as one-line errors (`_render_traceback_`: `Name: message`, no traceback), whose message carries
 * a little Markdown (`ollama serve`, an address). JupyterLab shows an error in a `<pre>` that breaks words anywhere and
 * leaves the backticks; this renderer draws a boopiter fault as a paragraph that wraps at word boundaries, with its
 * code spans as code and its address as a link (`faultrenderer.ts` draws every other error exactly as JupyterLab
 * does). Which errors are boopiter's, and how one is drawn: pure, unit-tested.
 */

import { appendInline } from '../menu/inline';

/** The names of boopiter's errors (`boopiter_ext/errors.py`; tests/test_frontend_units.py keeps them in step). */
export const FAULT_NAMES: ReadonlySet<string> = new Set([
  'BoopError', 'ModelError', 'Unreachable', 'ModelNotFound', 'OllamaError', 'OllamaUnreachable', 'OllamaModelNotFound',
  'ReplyBroken', 'ReplyStalled', 'ReplyInterrupted', 'ReplyTooLong', 'NoModel', 'SettingsError', 'DeadDropError',
  'CassetteDrift', 'SchemaError', 'AnswerInvalid', 'TemplateError', 'BenchError', 'LocalModelError'
]);

export interface IFault {
  name: string;
  message: string;
}

/**
 * The boopiter fault an error output holds, or null: one of boopiter's names, and the one line it renders as
 * (`Name: message`, nothing more), as the kernel raised it.
 */
export function faultOf(error: unknown): IFault | null {
  if (typeof error !== 'object' || error === null) {
    return null;
  }
  const { ename, evalue, traceback } = error as { ename?: unknown; evalue?: unknown; traceback?: unknown };
  if (typeof ename !== 'string' || typeof evalue !== 'string' || !FAULT_NAMES.has(ename) || !Array.isArray(traceback)) {
    return null;
  }
  if (traceback.length !== 1 || traceback[0] !== `${ename}: ${evalue}` || !evalue.trim()) {
    return null;
  }
  return { name: ename, message: evalue };
}

/** Draw `fault` into `host`: its name, then its message as a paragraph (code spans and links, all set as text). */
export function drawFault(host: HTMLElement, fault: IFault): HTMLElement {
  const box = document.createElement('div');
  box.className = 'boop-Fault';
  const name = document.createElement('span');
  name.className = 'boop-Fault-name';
  name.textContent = fault.name;
  const text = appendInline(document.createElement('span'), fault.message);
  text.className = 'boop-Fault-text';
  box.append(name, document.createTextNode(': '), text);
  host.replaceChildren(box);
  return box;
}


export const ASK_WHY = 'Ask why';

/** What asking about an error does: given the rendered error's node, put the prompt cell below its cell. */
export type AskAboutError = (node: HTMLElement) => void;

/** The "Ask why" button under an error that is not boopiter's: a question about it, in a prompt cell below its cell. */
export function askButton(host: HTMLElement, ask: AskAboutError): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'boop-AskWhy';
  b.textContent = ASK_WHY;
  b.title = 'Ask the model why this cell failed and how to fix it: a prompt cell below it (%%prompt --fix)';
  b.addEventListener('click', () => ask(host));
  return b;
}
