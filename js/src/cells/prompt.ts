/**
 * What makes a code cell a prompt cell (pure: unit-tested). The saved form stays `%%prompt`, so any
 * Jupyter with boopiter loaded runs it; this frontend only shows it differently.
 */

export const PROMPT_MAGIC = '%%prompt';
/** A new prompt cell's source; the cursor goes to its second line. */
export const PROMPT_TEMPLATE = '%%prompt\n';
/** The editor mode of prompt cells: Markdown, as in Markdown cells. */
export const PROMPT_MIME = 'text/x-ipythongfm';

/** Whether a code cell's source makes it a prompt cell: it starts with `%%prompt` as a whole word. */
export function isPromptSource(source: string): boolean {
  if (!source.startsWith(PROMPT_MAGIC)) {
    return false;
  }
  const next = source.charAt(PROMPT_MAGIC.length);
  return next === '' || /\s/.test(next);
}

/** How many leading characters decide `isPromptSource`: edits past them cannot change it. */
export const PROMPT_PREFIX = PROMPT_MAGIC.length + 1;

/** Whether a source edit (a Yjs delta) can change whether the cell is a prompt: it touches the first characters. */
export function touchesPrefix(delta: ReadonlyArray<{ retain?: number }> | undefined | null): boolean {
  if (!delta || !delta.length) {
    return true;
  }
  const first = delta[0];
  return !(typeof first.retain === 'number' && first.retain >= PROMPT_PREFIX);
}
