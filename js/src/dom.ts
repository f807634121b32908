/** The small DOM helpers the views share. */

/** A new `tag` element with `className` (if any) and `text` as its text (if given). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className = '', text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) {
    e.className = className;
  }
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

/** Set `node`'s text, unless it holds that text already. */
export function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) {
    node.textContent = text;
  }
}

/** Set `node`'s text to `text`, appending when it only grew (no re-layout of what was there). */
export function setGrowingText(node: HTMLElement, text: string): void {
  const first = node.firstChild;
  if (first && first.nodeType === Node.TEXT_NODE && node.childNodes.length === 1) {
    const t = first as Text;
    const old = t.data;
    if (text === old) {
      return;
    }
    if (text.length > old.length && text.startsWith(old)) {
      t.appendData(text.slice(old.length));
      return;
    }
  }
  node.textContent = text;
}
