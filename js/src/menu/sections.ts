/**
 * The sections of the brain menu's panel, one per kind of pick: the model, reasoning, memory, tools; and, above them,
 * what the notebook proposes beyond what you allowed, with the button that accepts it.
 */

import { el } from '../dom';
import { MenuSettings, MenuState, ModelEntry } from '../protocol/messages';
import { actionButton, hidden, selectControl, toggleButton } from './controls';
import { plainInline } from './inline';
import { capabilities, contextLabel, humanSize, modelDescription } from './labels';

/** A section with its label; the label's id names the section's list for assistive technology. */
export function labelledSection(panelId: string, label: string): [HTMLElement, string] {
  const id = `${panelId}-${label.toLowerCase().replace(/\W+/g, '-')}`;
  const section = el('div', 'boop-Menu-section');
  const l = el('div', 'boop-Menu-label', label);
  l.id = id;
  section.append(l);
  return [section, id];
}

/** The model list: Default, then every model listed (and the pick, if it is not listed). */
export function modelSection(panelId: string, menu: MenuState, set: MenuSettings): HTMLElement {
  const [section, labelId] = labelledSection(panelId, 'Model');
  const list = el('ul', 'boop-Menu-models');
  list.setAttribute('role', 'listbox');
  list.setAttribute('aria-labelledby', labelId);
  const entries: (ModelEntry | null)[] = [null, ...menu.models];
  if (set.model && !menu.models.some(m => m.id === set.model)) {
    entries.push({ id: set.model, label: `${set.model} · not listed`, source: 'declared', capabilities: [] });
  }
  for (const entry of entries) {
    const value = entry?.id ?? '';
    const selected = value === set.model;
    const li = el('li', 'boop-Menu-model');
    li.setAttribute('role', 'option');
    li.setAttribute('aria-selected', String(selected));
    li.tabIndex = selected ? 0 : -1;
    li.dataset.key = `model:${value}`;
    li.dataset.model = value;
    li.append(hidden(el('span', 'boop-Menu-check', selected ? '✓' : '')));
    if (!entry) {
      li.append(el('span', 'boop-Menu-modelName', 'Default'), el('span', 'boop-Menu-modelMeta', 'settings, else chosen automatically'));
      li.setAttribute('aria-label', 'Default: settings, else chosen automatically');
    } else {
      li.append(el('span', 'boop-Menu-modelName', entry.label));
      const caps = el('span', 'boop-Menu-caps');
      for (const c of capabilities(entry)) {
        const badge = el('span', 'boop-Menu-cap', c.icon);
        badge.title = c.name;
        caps.append(badge);
      }
      li.append(caps, el('span', 'boop-Menu-modelMeta', [humanSize(entry.size), entry.source].filter(Boolean).join(' · ')));
      if (entry.offline) {
        li.classList.add('boop-mod-offline');
        li.append(el('span', 'boop-Menu-offlineMark', '⚠ offline'));
        li.title = `offline: ${plainInline(entry.offline)}`;
      } else if (entry.note) {
        li.title = entry.note;
      }
      li.setAttribute('aria-label', modelDescription(entry));
    }
    list.append(li);
  }
  if (!list.querySelector('[tabindex="0"]')) {
    (list.firstElementChild as HTMLElement).tabIndex = 0;
  }
  section.append(list);
  return section;
}

/** Reasoning: on or off, the reasoning model, the effort. */
export function reasoningSection(panelId: string, menu: MenuState, set: MenuSettings): HTMLElement {
  const [section] = labelledSection(panelId, 'Reasoning');
  const thinkers = menu.models.filter(m => m.capabilities.includes('thinking'));
  const none = !thinkers.length && !set.reasoning_model;
  const row = el('div', 'boop-Menu-row');
  const toggle = toggleButton('reasoning', 'Use reasoning model', set.reasoning, 'Answer with the reasoning model instead of the standard one');
  const options: [string, string][] = [['no reasoning model', ''], ...thinkers.map(m => [m.label, m.id] as [string, string])];
  if (set.reasoning_model && !thinkers.some(m => m.id === set.reasoning_model)) {
    options.push([`${set.reasoning_model} · not listed`, set.reasoning_model]);
  }
  const select = selectControl('reasoning_model', 'model', options, set.reasoning_model, 'The model that answers when reasoning is on');
  row.append(toggle, select);
  const effort = el('div', 'boop-Menu-effort');
  effort.setAttribute('role', 'radiogroup');
  effort.setAttribute('aria-label', 'Reasoning effort');
  const efforts = menu.options.efforts.length ? menu.options.efforts : [['auto', ''], ['L', 'l'], ['M', 'm'], ['H', 'h']];
  const current = ['l', 'm', 'h', 'off'].includes(set.think) ? set.think : '';
  const names: { [k: string]: string } = { '': "the model's default effort", l: 'low effort', m: 'medium effort', h: 'high effort', off: 'no reasoning' };
  // the effort is the reasoning model's: it applies, and can be picked, while reasoning is on
  const why = none ? 'No reasoning model is listed: pull a thinking model to pick an effort'
    : !set.reasoning ? 'The effort applies while reasoning is on: switch on "Use reasoning model" first' : '';
  if (why) {
    effort.setAttribute('aria-disabled', 'true');
    effort.title = why;
  }
  for (const [label, value] of efforts) {
    const b = el('button', 'boop-Menu-chip');
    b.type = 'button';
    b.setAttribute('role', 'radio');
    const on = value === current;
    b.setAttribute('aria-checked', String(on));
    b.setAttribute('aria-label', `effort ${label}: ${names[value] ?? value}`);
    b.title = why || (names[value] ?? value);
    b.tabIndex = on ? 0 : -1;
    b.dataset.key = `think:${value}`;
    b.dataset.think = value;
    b.append(hidden(el('span', 'boop-Menu-mark', on ? '✓' : '')), el('span', '', label));
    b.disabled = !!why;
    effort.append(b);
  }
  select.querySelector('select')!.disabled = none;
  (toggle as HTMLButtonElement).disabled = none && !set.reasoning;
  const effortRow = el('div', 'boop-Menu-row');
  effortRow.append(el('span', 'boop-Menu-inlineLabel', 'effort'), effort);
  section.append(row, effortRow);
  return section;
}

/** Memory: how long the model stays loaded, and the context window. */
export function memorySection(panelId: string, menu: MenuState, set: MenuSettings): HTMLElement {
  const [section] = labelledSection(panelId, 'Memory');
  const keep: [string, string][] = menu.options.keep_alive.length ? [...menu.options.keep_alive] : [['default', '']];
  if (!keep.some(([, v]) => v === set.keep_alive)) {
    keep.push([`${set.keep_alive} · not listed`, set.keep_alive]);
  }
  const cap = menu.answering.context_length;
  const sizes = [0, ...menu.options.context_sizes.filter(n => n && (!cap || n <= cap))];
  if (!sizes.includes(set.context_size)) {
    sizes.push(set.context_size);
  }
  const row = el('div', 'boop-Menu-row');
  row.append(
    selectControl('keep_alive', 'keep', keep, set.keep_alive, 'How long the server keeps the model in memory after a reply'),
    selectControl('context_size', 'context', sizes.map(n => [contextLabel(n), String(n)] as [string, string]), String(set.context_size),
      'Context window (num_ctx); auto sizes it to each prompt')
  );
  section.append(row);
  return section;
}

/**
 * Completions: the model of the ghost text in code cells (a small code model with fill-in-the-middle); `auto` names
 * the one chosen, or says why there is none. Only your settings turn completions on or off (`completions`).
 */
export function completionsSection(panelId: string, menu: MenuState, set: MenuSettings): HTMLElement {
  const [section] = labelledSection(panelId, 'Completions');
  const c = menu.completion;
  const auto = set.completion_model ? 'auto' : c.on ? `auto: ${c.model}` : `off: ${c.why}`;
  const options: [string, string][] = [[auto, ''], ...menu.options.completion_models.map(m => [m, m] as [string, string])];
  if (set.completion_model && !menu.options.completion_models.includes(set.completion_model)) {
    options.push([`${set.completion_model} · not listed`, set.completion_model]);
  }
  const row = el('div', 'boop-Menu-row');
  row.append(selectControl('completion_model', 'ghost text', options, set.completion_model,
    c.on ? `Ghost text as you type in code cells, from ${c.model} (${c.why})` : `No ghost text: ${c.why}`));
  section.append(row);
  return section;
}

/** Tools: the tool sources on, and auto-run. */
export function toolsSection(panelId: string, menu: MenuState, set: MenuSettings): HTMLElement {
  const [section] = labelledSection(panelId, 'Tools');
  const row = el('div', 'boop-Menu-row');
  const chosen = set.tools ? new Set(set.tools.split(',').map(t => t.trim()).filter(Boolean)) : null;
  for (const t of menu.options.tool_sources) {
    const on = chosen ? chosen.has(t.name) : t.on;
    const label = el('label', 'boop-Menu-check-label');
    const box = el('input');
    box.type = 'checkbox';
    box.checked = on;
    box.dataset.key = `tool:${t.name}`;
    box.dataset.tool = t.name;
    label.title = t.description;
    label.append(box, el('span', '', t.name));
    row.append(label);
  }
  row.append(toggleButton('auto', 'Auto-run', set.auto, 'Run guarded tool calls by themselves (off: each call waits for Run)'));
  section.append(row);
  if (menu.offered_tools.length) {
    section.append(el('div', 'boop-Menu-hint', `offered: ${menu.offered_tools.join(', ')}`));
  }
  return section;
}

/** Replies: whether a prompt that asks exactly what it asked before shows its saved reply again. */
export function repliesSection(panelId: string, set: MenuSettings): HTMLElement {
  const [section] = labelledSection(panelId, 'Replies');
  const row = el('div', 'boop-Menu-row');
  row.append(toggleButton('reuse', 'Reuse saved replies', set.reuse,
    'Show the saved reply again when a prompt asks exactly what it asked before (off: every prompt asks the model)'));
  section.append(row);
  return section;
}

/**
 * A notebook whose prompt cells have no `%load_ext boopiter_ext` cell above them runs only where this extension loads
 * boopiter: a line that says so, and one click to add the cell (null when it has one, or no prompt cell).
 */
export function loadCellSection(needed: boolean): HTMLElement | null {
  if (!needed) {
    return null;
  }
  const section = el('div', 'boop-Menu-loadcell');
  const text = el('div', 'boop-Menu-loadcellText');
  text.append('⚠ No ', el('code', '', '%load_ext boopiter_ext'),
    ' cell above the prompt cells: other Jupyters (nbclient, papermill, VS Code) cannot rerun this notebook.');
  section.append(text, actionButton('add-load-cell', 'Add the load cell', 'Put a %load_ext boopiter_ext cell above the first prompt cell'));
  return section;
}

/**
 * What the notebook (or its project's settings.ini) proposes beyond what you allowed, and one click to accept it for
 * this notebook on this machine; null when it proposes nothing more. The text is the kernel's, set as text.
 */
export function consentSection(menu: MenuState): HTMLElement | null {
  const c = menu.consent;
  if (!c.proposed.length) {
    return null;
  }
  const section = el('div', 'boop-Menu-consent');
  section.setAttribute('role', 'alert');
  const where = c.notebook ? `${c.notebook} on this machine` : 'this kernel (the notebook file is not known)';
  const allow = actionButton('allow', 'Allow for this notebook', `Accept it for ${where}`, 'boop-Menu-primary');
  section.append(el('div', 'boop-Menu-consentText', `⚠ ${c.text}`), allow);
  return section;
}
