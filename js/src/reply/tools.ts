/**
 * The tool calls of a reply, as DOM: a round of calls (`tool_round`: one `<details>` per call with its source and
 * result, rebuilt only when that call changed, so open/closed survives every update) and the tool loop's summary
 * (`tool_loop`). Model text only enters as text.
 */

import { el, setText } from '../dom';
import { ToolLoopData, ToolRoundData } from '../protocol/bundles';
import { toolMark } from './badges';

/** One call of a round as drawn: its list item, its details, and the call it shows (as JSON). */
export interface IToolStepView {
  li: HTMLElement;
  details: HTMLDetailsElement;
  key: string;
}

/** Draw round `t` into `node`; `steps` are the calls drawn there so far (updated in place). */
export function drawToolRound(node: HTMLElement, t: ToolRoundData, steps: IToolStepView[]): void {
  if (!node.firstChild) {
    node.classList.add('boop-Tools');
    node.append(el('div', 'boop-Tools-head'), el('ul', 'boop-Tools-list'));
  }
  const head = node.querySelector('.boop-Tools-head') as HTMLElement;
  const list = node.querySelector('.boop-Tools-list') as HTMLElement;
  const n = t.steps.length;
  setText(head, `Tool calls · round ${t.round} · ${n} call${n === 1 ? '' : 's'}`);
  t.steps.forEach((step, i) => {
    const key = JSON.stringify(step);
    let item = steps[i];
    if (!item) {
      const li = el('li', 'boop-Tool');
      const details = el('details');
      li.append(details);
      list.append(li);
      item = steps[i] = { li, details, key: '' };
    }
    if (item.key === key) {
      return;
    }
    item.key = key;
    const mark = toolMark(step.status);
    item.li.className = `boop-Tool boop-mod-${mark.tone}`;
    const summary = el('summary', 'boop-Tool-summary');
    const icon = el('span', 'boop-Tool-icon', mark.icon);
    icon.setAttribute('aria-hidden', 'true');
    const firstLine = step.source.split('\n', 1)[0];
    summary.append(
      icon,
      el('code', 'boop-Tool-call', firstLine + (step.source.includes('\n') ? ' …' : '')),
      el('span', 'boop-Tool-status', step.status || 'pending')
    );
    const parts: HTMLElement[] = [summary, el('div', 'boop-Tool-label', 'call'), el('pre', 'boop-Tool-source', step.source)];
    if (step.result) {
      parts.push(el('div', 'boop-Tool-label', 'result'), el('pre', 'boop-Tool-result', step.result));
    }
    if (step.flags.length) {
      parts.push(el('div', 'boop-Tool-flags', `⚠ flagged: ${step.flags.join(', ')}`));
    }
    if (step.recovered) {
      parts.push(el('div', 'boop-Tool-note', 'recovered from a malformed call'));
    }
    item.details.replaceChildren(...parts);
  });
  while (steps.length > n) {
    steps.pop()!.li.remove();
  }
}

/** Draw the tool loop's summary `t` into `node`: how it stopped, and every call with its round and status. */
export function drawToolLoop(node: HTMLElement, t: ToolLoopData): void {
  let details = node.querySelector('details.boop-ToolLoop') as HTMLDetailsElement | null;
  if (!details) {
    details = el('details', 'boop-ToolLoop');
    details.append(el('summary'), el('ul', 'boop-ToolLoop-list'), el('div', 'boop-ToolLoop-note'));
    node.append(details);
  }
  const calls = t.steps.length;
  const bits = ['Tool loop', t.stop ? `stopped: ${t.stop}` : '', `${t.rounds} round${t.rounds === 1 ? '' : 's'}`,
    `${calls} call${calls === 1 ? '' : 's'}`];
  setText(details.querySelector('summary') as HTMLElement, bits.filter(Boolean).join(' · '));
  const list = details.querySelector('.boop-ToolLoop-list') as HTMLElement;
  const key = JSON.stringify(t.steps);
  if (list.dataset.key !== key) {
    list.dataset.key = key;
    list.replaceChildren(
      ...t.steps.map(s => {
        const mark = toolMark(s.status);
        const li = el('li', `boop-Tool boop-mod-${mark.tone}`);
        const icon = el('span', 'boop-Tool-icon', mark.icon);
        icon.setAttribute('aria-hidden', 'true');
        li.append(icon, el('span', 'boop-Tool-round', `round ${s.round}`), el('code', 'boop-Tool-call', s.source),
          el('span', 'boop-Tool-status', s.status));
        return li;
      })
    );
  }
  setText(details.querySelector('.boop-ToolLoop-note') as HTMLElement, t.note);
}
