/**
 * The pure helpers of rendering a reply block by block (unit-tested). The kernel sends the answer as the blocks it
 * made safe, each checked on its own (`blocks` of the reply data): the view renders exactly those, and never cuts
 * the Markdown itself again (a fence reader of its own once disagreed with CommonMark, and raw HTML in a code block
 * came out live).
 */

/** A code fence's opening line (up to three spaces, three or more backticks or tildes) and its fence. */
const OPENING = /^ {0,3}(`{3,}|~{3,})/;

/**
 * The code of a fenced block that is still growing: everything after its opening line, without the closing fence
 * the kernel adds (a streaming reply's last block, shown as plain text while it grows).
 */
export function openFenceBody(source: string): string {
  const nl = source.indexOf('\n');
  if (nl < 0) {
    return '';
  }
  const fence = OPENING.exec(source)?.[1];
  const body = source.slice(nl + 1);
  const last = body.lastIndexOf('\n');
  const closing = body.slice(last + 1).trim();
  if (fence && closing.length >= fence.length && closing === fence[0].repeat(closing.length)) {
    return last < 0 ? '' : body.slice(0, last);
  }
  return body;
}

/**
 * Whether the last block, still growing, may be rendered again now: at most a fifth of the time
 * goes to re-rendering it, so a huge growing block costs O(n) over the stream, not O(n²).
 */
export function mayRerender(now: number, lastStart: number, lastCost: number, share = 0.2): boolean {
  return now - lastStart >= lastCost / share;
}
