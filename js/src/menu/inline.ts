/**
 * The little Markdown a kernel's message carries (`code` spans and http(s) addresses), drawn safely: pieces of text
 * set with `textContent`, code spans as `<code>`, addresses as links only when they parse as http(s). Never
 * `innerHTML`: the text may quote a server or a model (pure DOM: unit-tested with generated inputs).
 */

/** One piece of a message: plain text, a `code` span, or an address. */
export interface IPiece {
  kind: 'text' | 'code' | 'link';
  text: string;
}

const TOKENS = /`([^`\n]+)`|(https?:\/\/[^\s`<>"')\]]+)/g;
/** What ends a sentence rather than an address: left out of the link. */
const TRAILING = /[.,;:!?]+$/;

/** `s` as its pieces, in order; joined they give `s` back, backticks aside. */
export function inlinePieces(s: string): IPiece[] {
  const out: IPiece[] = [];
  const text = (t: string) => {
    if (!t) {
      return;
    }
    const last = out[out.length - 1];
    if (last?.kind === 'text') {
      last.text += t;
    } else {
      out.push({ kind: 'text', text: t });
    }
  };
  let at = 0;
  for (const m of s.matchAll(TOKENS)) {
    text(s.slice(at, m.index));
    if (m[1] !== undefined) {
      out.push({ kind: 'code', text: m[1] });
    } else {
      const url = m[2];
      const tail = TRAILING.exec(url)?.[0] ?? '';
      const bare = url.slice(0, url.length - tail.length);
      if (isWebAddress(bare)) {
        out.push({ kind: 'link', text: bare });
      } else {
        text(bare);
      }
      text(tail);
    }
    at = m.index! + m[0].length;
  }
  text(s.slice(at));
  return out;
}

/** Whether `s` parses as an http(s) URL (what a link may point to). */
export function isWebAddress(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/** Append `s` to `host` as text, `<code>` and links (opened in a new tab, no referrer). */
export function appendInline(host: HTMLElement, s: string): HTMLElement {
  for (const p of inlinePieces(s)) {
    if (p.kind === 'text') {
      host.append(document.createTextNode(p.text));
    } else if (p.kind === 'code') {
      const code = document.createElement('code');
      code.textContent = p.text;
      host.append(code);
    } else {
      const a = document.createElement('a');
      a.href = p.text;
      a.textContent = p.text;
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      host.append(a);
    }
  }
  return host;
}

/** The text a message reads as, backticks aside (for a title attribute, which shows no code). */
export function plainInline(s: string): string {
  return inlinePieces(s)
    .map(p => p.text)
    .join('');
}
