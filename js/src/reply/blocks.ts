/**
 * Splitting streamed Markdown into top-level blocks, incrementally (pure: unit-tested).
 *
 * A reply is re-sent whole on every update; re-rendering all of it each time costs O(n²) over a
 * stream. Instead the text is cut at blank lines outside fenced code and `$$` math, each block is
 * rendered on its own, and only blocks whose text changed are rendered again: while a reply streams,
 * that is the last one. The cut is conservative: a blank line is a boundary only when the next line
 * starts flush left and does not continue a list, so list items with paragraphs, indented code and
 * lazy continuations stay in the block they belong to.
 */

export type BlockKind = 'text' | 'list' | 'fence' | 'math';

export interface Block {
  /** Offset of the block's first character. */
  start: number;
  /** Offset just past its last non-blank line (the newline excluded). */
  end: number;
  /** What its first line starts: a paragraph or other text, a list, a fenced code block, `$$` math. */
  kind: BlockKind;
  /** A fence or `$$` that the text has not closed yet (the block is still growing). */
  open: boolean;
}

const FENCE = /^[ \t]*(`{3,}|~{3,})/;
const LIST = /^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)/;

function fenceOpening(line: string): string | null {
  const m = FENCE.exec(line);
  if (!m) {
    return null;
  }
  // a backtick fence's info string has no backticks: "```x```" is inline code, not a fence
  if (m[1][0] === '`' && line.slice(m[0].length).includes('`')) {
    return null;
  }
  return m[1];
}

function closesFence(line: string, fence: string): boolean {
  const m = FENCE.exec(line);
  return !!m && m[1][0] === fence[0] && m[1].length >= fence.length && line.slice(m[0].length).trim() === '';
}

function opensMath(line: string): boolean {
  const t = line.trim();
  return t.startsWith('$$') && !t.slice(2).includes('$$');
}

/** The blocks of `text` from offset `from`, which must be the start of a block (or 0). */
export function splitBlocks(text: string, from = 0): Block[] {
  const blocks: Block[] = [];
  const n = text.length;
  let start = -1;
  let end = -1;
  let kind: BlockKind = 'text';
  let blank = false;
  let fence: string | null = null;
  let math = false;
  let pos = from;
  while (pos < n) {
    const nl = text.indexOf('\n', pos);
    const lineEnd = nl < 0 ? n : nl;
    const line = text.slice(pos, lineEnd);
    if (fence !== null) {
      if (closesFence(line, fence)) {
        fence = null;
      }
      end = lineEnd;
    } else if (math) {
      if (line.trimEnd().endsWith('$$')) {
        math = false;
      }
      end = lineEnd;
    } else if (line.trim() === '') {
      blank = start >= 0;
    } else {
      if (start >= 0 && blank) {
        const indented = line[0] === ' ' || line[0] === '\t';
        if (!indented && !(kind === 'list' && LIST.test(line))) {
          blocks.push({ start, end, kind, open: false });
          start = -1;
        }
      }
      blank = false;
      const opening = fenceOpening(line);
      if (start < 0) {
        start = pos;
        kind = opening ? 'fence' : opensMath(line) ? 'math' : LIST.test(line) ? 'list' : 'text';
      }
      if (opening) {
        fence = opening;
      } else if (opensMath(line)) {
        math = true;
      }
      end = lineEnd;
    }
    pos = nl < 0 ? n : nl + 1;
  }
  if (start >= 0) {
    blocks.push({ start, end, kind, open: fence !== null || math });
  }
  return blocks;
}

export interface BlockUpdate {
  blocks: Block[];
  /** How many leading blocks are the same text as in the previous update (their DOM can stay). */
  stable: number;
}

/**
 * The blocks of a text that grows: `update(text)` rescans only from the last block (from the one
 * before it when that is a list, whose end depends on how the next line turns out), as long as the
 * text before that point did not change; otherwise it rescans all and keeps what still matches.
 */
export class BlockTracker {
  text = '';
  blocks: Block[] = [];

  update(next: string): BlockUpdate {
    const prev = this.text;
    const old = this.blocks;
    let keep = old.length - 1;
    if (keep > 0 && old[keep - 1].kind === 'list') {
      keep -= 1;
    }
    let blocks: Block[];
    let stable: number;
    const from = keep > 0 ? old[keep].start : 0;
    if (keep > 0 && next.length >= from && next.slice(0, from) === prev.slice(0, from)) {
      blocks = old.slice(0, keep).concat(splitBlocks(next, from));
      stable = keep;
    } else {
      blocks = splitBlocks(next);
      stable = 0;
      while (
        stable < old.length &&
        stable < blocks.length &&
        old[stable].start === blocks[stable].start &&
        old[stable].end === blocks[stable].end &&
        prev.slice(old[stable].start, old[stable].end) === next.slice(blocks[stable].start, blocks[stable].end)
      ) {
        stable++;
      }
    }
    this.text = next;
    this.blocks = blocks;
    return { blocks, stable };
  }
}

/** The code of a fenced block that is still open: everything after its opening line. */
export function openFenceBody(source: string): string {
  const nl = source.indexOf('\n');
  return nl < 0 ? '' : source.slice(nl + 1);
}

/**
 * Whether the last block, still growing, may be rendered again now: at most a fifth of the time
 * goes to re-rendering it, so a huge growing block costs O(n) over the stream, not O(n²).
 */
export function mayRerender(now: number, lastStart: number, lastCost: number, share = 0.2): boolean {
  return now - lastStart >= lastCost / share;
}
