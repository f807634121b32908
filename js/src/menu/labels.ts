/**
 * Words the brain menu shows: sizes, model descriptions, status lines, the toolbar button's label, and the binding
 * line `%boop` shows (pure: unit-tested).
 */

import { ChannelState, effectiveSettings } from '../channel/state';
import { Answering, Binding, MenuState, ModelEntry } from '../protocol/messages';

/** `1_359_000_000` -> '1.4 GB' (decimal units, as the kernel's `human_size`). */
export function humanSize(n: number | undefined): string {
  if (!n) {
    return '';
  }
  for (const unit of ['B', 'KB', 'MB', 'GB', 'TB']) {
    if (n < 1000 || unit === 'TB') {
      return unit === 'B' || unit === 'KB' ? `${Math.round(n)} ${unit}` : `${n.toFixed(1)} ${unit}`;
    }
    n /= 1000;
  }
  return '';
}

export function formatInt(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** A context size for a menu: 0 is auto, whole multiples of 1024 are `8k`. */
export function contextLabel(n: number): string {
  if (!n) {
    return 'auto';
  }
  return n % 1024 === 0 ? `${n / 1024}k` : formatInt(n);
}

export interface Capability {
  icon: string;
  name: string;
}

const CAPABILITIES: Capability[] = [
  { icon: '🔧', name: 'tools' },
  { icon: '👁️', name: 'vision' },
  { icon: '🧠', name: 'thinking' }
];

/** The capability badges of a model, in a fixed order; others (completion, embedding) are not shown. */
export function capabilities(entry: ModelEntry): Capability[] {
  return CAPABILITIES.filter(c => entry.capabilities.includes(c.name));
}

/** One line for a model in the picker's accessible name: "qwen3:8b, tools, thinking, 5.2 GB, offline". */
export function modelDescription(entry: ModelEntry): string {
  return [
    entry.label,
    ...capabilities(entry).map(c => c.name),
    humanSize(entry.size),
    entry.source,
    entry.offline ? `offline: ${entry.offline}` : ''
  ]
    .filter(Boolean)
    .join(', ');
}

function keepAliveText(v: string): string {
  if (v === '0') {
    return 'unload after each reply';
  }
  if (v === '-1') {
    return 'keep loaded forever';
  }
  return /^\d+$/.test(v) ? `keep-alive ${v} min` : `keep-alive ${v}`;
}

/** One readable line for a binding, as the kernel's `binding_text` writes it. */
export function bindingText(b: Binding): string {
  const keys = Object.keys(b).filter(k => k !== 'picked_at' && k !== 'version');
  if (!keys.length) {
    return 'boopiter binding · none (settings.ini and defaults apply)';
  }
  const bits = [`model ${b.model || 'from settings'}`];
  if (b.reasoning_model || b.reasoning !== undefined) {
    const effort = b.think ? `, effort ${b.think}` : '';
    bits.push(`reasoning ${b.reasoning ? 'on' : 'off'} (${b.reasoning_model || 'no model'}${effort})`);
  }
  if (b.keep_alive !== undefined) {
    bits.push(keepAliveText(b.keep_alive));
  }
  if (b.context_size !== undefined) {
    bits.push(b.context_size ? `context ${formatInt(b.context_size)} tokens` : 'context auto');
  }
  if (b.tools !== undefined) {
    bits.push(`tools ${b.tools}`);
  }
  if (b.auto !== undefined) {
    bits.push(b.auto ? 'auto-run tool calls' : 'tool calls wait for Run');
  }
  if (b.reuse !== undefined) {
    bits.push(b.reuse ? 'saved replies reused' : 'every prompt asks the model');
  }
  if (b.completion_model !== undefined) {
    bits.push(`completions ${b.completion_model}`);
  }
  return 'boopiter binding · ' + bits.join(' · ');
}

/** The offline sources, one line each. */
export function offlineLines(menu: MenuState): string[] {
  return Object.entries(menu.problems).map(([source, why]) => `${source}: ${why}`);
}

/** Who answers and why: `auto → X (why)` when the kernel chose by itself, else `X (why)`. */
export function answeringText(a: Pick<Answering, 'model' | 'why' | 'auto'>): string {
  const auto = a.auto && a.model && a.why.startsWith('auto: ');
  const why = auto ? a.why.slice('auto: '.length) : a.why;
  return `${auto ? 'auto → ' : ''}${a.model || 'none available'}${why ? ` (${why})` : ''}`;
}

/**
 * "answering: qwen3:8b (notebook binding) · 4,096-token context · 5.2 GB · models: 3 ollama, 1 local": the context is
 * the window the next request asks for (what its reply details say), and the size is said once (the automatic
 * choice's reason may give it already).
 */
export function statusLine(menu: MenuState): string {
  const a = menu.answering;
  const who = answeringText(a);
  const bits = [`answering: ${who}`];
  if (a.reasoning) {
    bits.push('reasoning');
  }
  const window = a.window ?? a.context_length;
  if (window) {
    bits.push(`${formatInt(window)}-token context`);
  }
  const size = humanSize(a.size);
  if (size && !who.includes(size)) {
    bits.push(size);
  }
  const counts = new Map<string, number>();
  for (const m of menu.models) {
    counts.set(m.source, (counts.get(m.source) ?? 0) + 1);
  }
  const found = [...counts].map(([src, n]) => `${n} ${src}`).join(', ');
  bits.push(`models: ${found || 'none'}`);
  return bits.join(' · ');
}

export interface ButtonLabel {
  text: string;
  title: string;
  /** A source is offline, or the model that answers is, or the notebook proposes what you did not allow: a ⚠. */
  warn: boolean;
  /** Nothing to offer at all (no kernel, not Python). */
  idle: boolean;
}

/** What the toolbar button says, for every phase. */
export function buttonLabel(s: ChannelState): ButtonLabel {
  switch (s.phase) {
    case 'nokernel':
      return { text: 'no kernel', title: 'boopiter: start a kernel to use prompt cells', warn: false, idle: true };
    case 'unsupported':
      return {
        text: 'not Python',
        title: `boopiter needs an IPython kernel (this one runs ${s.language || 'another language'})`,
        warn: false,
        idle: true
      };
    case 'connecting':
      return { text: s.menu ? s.menu.answering.model || '…' : '…', title: 'boopiter: asking the kernel…', warn: false, idle: false };
    case 'loading':
      return { text: 'loading…', title: 'boopiter: loading the extension in the kernel…', warn: false, idle: false };
    case 'absent':
      return {
        text: 'Load boopiter',
        title: s.error ? `boopiter is not loaded: ${s.error}` : 'boopiter is not loaded in this kernel: click to load it',
        warn: !!s.error,
        idle: false
      };
    case 'ready': {
      const menu = s.menu!;
      const settings = effectiveSettings(s)!;
      const picked = s.pending.some(p => 'model' in p) ? settings.model || menu.answering.model : menu.answering.model;
      const entry = menu.models.find(m => m.id === picked);
      const offline = Object.keys(menu.problems).length > 0 || !!entry?.offline;
      const proposed = menu.consent.proposed.length > 0;
      const lines = [statusLine(menu), ...offlineLines(menu).map(l => `offline: ${l}`)];
      if (proposed) {
        lines.push(menu.consent.text);
      }
      if (s.error) {
        lines.push(`error: ${s.error}`);
      }
      return {
        text: picked || 'no model',
        title: `boopiter · ${lines.join('\n')}`,
        warn: offline || proposed || !!s.error,
        idle: false
      };
    }
  }
}

/** The `tools` setting for the sources that are on: their names, or `none`. */
export function toolsSetting(sources: { name: string; on: boolean }[]): string {
  return (
    sources
      .filter(t => t.on)
      .map(t => t.name)
      .join(', ') || 'none'
  );
}
