/**
 * The parts of a reply's DOM, built once so every update keeps them (and the open/closed state of the reasoning and
 * the details): the badges, the reasoning, the body the blocks go in, the note, the warning, the details, and the
 * live line with its stop button.
 */

import { el } from '../dom';
import { Badge } from './badges';
import { IconFactory, textIcon } from './codeactions';

export interface Parts {
  badges: HTMLElement;
  badgesKey: string;
  reasoning: HTMLDetailsElement;
  reasoningSummary: HTMLElement;
  reasoningText: HTMLElement;
  body: HTMLElement;
  note: HTMLElement;
  warning: HTMLElement;
  details: HTMLDetailsElement;
  detailsSummary: HTMLElement;
  detailsList: HTMLElement;
  detailsKey: string;
  live: HTMLElement;
  liveText: HTMLElement;
  elapsed: HTMLElement;
  stop: HTMLButtonElement;
  stopLabel: HTMLElement;
}

export function badgeElement(b: Badge): HTMLElement {
  const e = el('span', `boop-Badge boop-mod-${b.tone}`);
  e.title = b.title;
  e.append(el('span', 'boop-Badge-icon', b.icon), el('span', 'boop-Badge-label', b.label));
  e.firstElementChild!.setAttribute('aria-hidden', 'true');
  return e;
}

/** Build the parts, in order, into the empty `node` (a reply's); `icon` draws the stop button's icon. */
export function buildParts(node: HTMLElement, icon: IconFactory = textIcon): Parts {
  const badges = el('div', 'boop-Reply-badges');
  badges.hidden = true;
  const reasoning = el('details', 'boop-Reply-reasoning');
  const reasoningSummary = el('summary', 'boop-Reply-reasoningSummary');
  const reasoningText = el('div', 'boop-Reply-reasoningText');
  reasoning.append(reasoningSummary, reasoningText);
  reasoning.hidden = true;
  const body = el('div', 'boop-Reply-body jp-RenderedHTMLCommon jp-RenderedMarkdown');
  const note = el('div', 'boop-Reply-note');
  const warning = el('div', 'boop-Reply-warning');
  warning.setAttribute('role', 'note');
  const details = el('details', 'boop-Reply-details');
  const detailsSummary = el('summary', '', 'Reply details');
  const detailsList = el('ul', 'boop-Reply-detailsList');
  details.append(detailsSummary, detailsList);
  details.hidden = true;
  const live = el('div', 'boop-Reply-live');
  live.hidden = true;
  const liveText = el('span', 'boop-Reply-liveText');
  const elapsed = el('span', 'boop-Reply-elapsed');
  const stop = el('button', 'boop-Reply-stop jp-mod-styled');
  stop.type = 'button';
  stop.dataset.boopAction = 'stop';
  stop.title = 'Interrupt the kernel: stop this reply';
  const stopLabel = el('span', '', 'Stop');
  const stopIcon = icon('stop');
  stopIcon.classList.add('boop-Reply-stopIcon');
  stopIcon.setAttribute('aria-hidden', 'true');
  stop.append(stopIcon, stopLabel);
  live.append(el('span', 'boop-Reply-spinner'), liveText, elapsed, stop);
  live.firstElementChild!.setAttribute('aria-hidden', 'true');
  node.append(badges, reasoning, body, note, warning, details, live);
  return {
    badges,
    badgesKey: '',
    reasoning,
    reasoningSummary,
    reasoningText,
    body,
    note,
    warning,
    details,
    detailsSummary,
    detailsList,
    detailsKey: '',
    live,
    liveText,
    elapsed,
    stop,
    stopLabel
  };
}
