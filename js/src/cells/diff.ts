/**
 * A line diff of a cell's text before and after a change the model proposes: what the review shows (`review.ts`).
 * Common leading and trailing lines are matched first; the middle by a longest common subsequence while it is small
 * enough (`MAX_CELLS` comparisons), else shown as removed then added. Plain data, no DOM.
 */

export type DiffKind = 'same' | 'del' | 'add';
export interface IDiffLine {
  kind: DiffKind;
  text: string;
}

/** The most line comparisons the middle of a diff may cost before it is shown as removed-then-added. */
export const MAX_CELLS = 4_000_000;

function lines(s: string): string[] {
  return s === '' ? [] : s.split('\n');
}

/** The lines of `before` and `after` in order, each kept, removed or added; both texts can be read back from it. */
export function lineDiff(before: string, after: string): IDiffLine[] {
  const a = lines(before);
  const b = lines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) {
    head++;
  }
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) {
    tail++;
  }
  const same = (text: string): IDiffLine => ({ kind: 'same', text });
  const out: IDiffLine[] = a.slice(0, head).map(same);
  out.push(...middle(a.slice(head, a.length - tail), b.slice(head, b.length - tail)));
  out.push(...a.slice(a.length - tail).map(same));
  return out;
}

function middle(a: string[], b: string[]): IDiffLine[] {
  const n = a.length;
  const m = b.length;
  if (n * m > MAX_CELLS) {
    return [...a.map(text => ({ kind: 'del' as const, text })), ...b.map(text => ({ kind: 'add' as const, text }))];
  }
  // lcs[i][j]: the longest common subsequence of a[i:] and b[j:]
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out: IDiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push({ kind: 'same', text: a[i++] });
      j++;
    } else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out.push({ kind: 'del', text: a[i++] }); // what goes, before what comes in its place
    } else {
      out.push({ kind: 'add', text: b[j++] });
    }
  }
  return out;
}

/** The diff to show: unchanged runs longer than `2 * context` lines folded to their ends and a count. */
export function folded(diff: readonly IDiffLine[], context = 3): (IDiffLine | { kind: 'fold'; count: number })[] {
  const out: (IDiffLine | { kind: 'fold'; count: number })[] = [];
  let i = 0;
  while (i < diff.length) {
    if (diff[i].kind !== 'same') {
      out.push(diff[i++]);
      continue;
    }
    let j = i;
    while (j < diff.length && diff[j].kind === 'same') {
      j++;
    }
    const keepHead = i === 0 ? 0 : context; // lines after a change
    const keepTail = j === diff.length ? 0 : context; // lines before the next change
    if (j - i > keepHead + keepTail + 1) {
      out.push(...diff.slice(i, i + keepHead), { kind: 'fold', count: j - i - keepHead - keepTail }, ...diff.slice(j - keepTail, j));
    } else {
      out.push(...diff.slice(i, j));
    }
    i = j;
  }
  return out;
}
