/**
 * Checking what arrives: every comm message and mime bundle from the kernel is untrusted data, read here into
 * values of the expected types (unknown keys dropped, missing ones filled in).
 */

import { PROTOCOL_VERSION } from './constants';
import {
  Answering,
  Binding,
  ConsentState,
  IBadEdit,
  IEditMessage,
  KernelMessage,
  LabelValue,
  MenuState,
  ModelEntry,
  ModelSource,
  Think
} from './messages';
import { ReplyBundle, ReplyData, ReplyStatus, WidgetPlaceholder } from './bundles';

type Json = { [key: string]: unknown };

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function str(v: unknown, fallback = ''): string {
  return typeof v === 'string' ? v : fallback;
}
function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
function bool(v: unknown): boolean {
  return v === true;
}
function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
function pairs<T>(v: unknown, check: (x: unknown) => x is T): LabelValue<T>[] {
  if (!Array.isArray(v)) {
    return [];
  }
  return v.filter(
    (p): p is LabelValue<T> => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && check(p[1])
  );
}
const isString = (x: unknown): x is string => typeof x === 'string';

const THINK: readonly string[] = ['l', 'm', 'h', 'off'];
const BINDING_STRINGS = ['model', 'reasoning_model', 'keep_alive', 'tools', 'completion_model', 'picked_at'] as const;
const BINDING_BOOLS = ['reasoning', 'auto', 'reuse'] as const;

/** The usable part of a binding: only known keys with values of the right type (empty strings dropped). */
export function cleanBinding(v: unknown): Binding {
  const b: Binding = {};
  if (!isObject(v)) {
    return b;
  }
  for (const k of BINDING_STRINGS) {
    if (typeof v[k] === 'string' && v[k] !== '') {
      b[k] = v[k] as string;
    }
  }
  for (const k of BINDING_BOOLS) {
    if (typeof v[k] === 'boolean') {
      b[k] = v[k] as boolean;
    }
  }
  if (typeof v.think === 'string' && THINK.includes(v.think)) {
    b.think = v.think as Think;
  }
  const size = num(v.context_size);
  if (size !== undefined && size >= 0) {
    b.context_size = Math.floor(size);
  }
  return b;
}

function parseModel(v: unknown): ModelEntry | null {
  if (!isObject(v) || typeof v.id !== 'string' || !v.id) {
    return null;
  }
  const e: ModelEntry = {
    id: v.id,
    label: str(v.label, v.id) || v.id,
    source: str(v.source, 'ollama') as ModelSource,
    capabilities: strings(v.capabilities)
  };
  const size = num(v.size);
  const ctx = num(v.context_length);
  if (size !== undefined) {
    e.size = size;
  }
  if (ctx !== undefined) {
    e.context_length = ctx;
  }
  if (typeof v.offline === 'string' && v.offline) {
    e.offline = v.offline;
  }
  if (typeof v.note === 'string' && v.note) {
    e.note = v.note;
  }
  return e;
}

/** A MenuState with every field present and of the right type (missing parts become empty). */
export function parseMenuState(v: unknown): MenuState | null {
  if (!isObject(v)) {
    return null;
  }
  const a = isObject(v.answering) ? v.answering : {};
  const s = isObject(v.settings) ? v.settings : {};
  const o = isObject(v.options) ? v.options : {};
  const problems: { [source: string]: string } = {};
  if (isObject(v.problems)) {
    for (const [k, why] of Object.entries(v.problems)) {
      if (typeof why === 'string') {
        problems[k] = why;
      }
    }
  }
  const answering: Answering = { model: str(a.model), why: str(a.why), auto: bool(a.auto), reasoning: bool(a.reasoning) };
  const ctx = num(a.context_length);
  const size = num(a.size);
  const window = num(a.window);
  if (window !== undefined && window > 0) {
    answering.window = window;
  }
  if (ctx !== undefined) {
    answering.context_length = ctx;
  }
  if (size !== undefined) {
    answering.size = size;
  }
  return {
    answering,
    settings: {
      model: str(s.model),
      reasoning_model: str(s.reasoning_model),
      reasoning: bool(s.reasoning),
      think: str(s.think),
      keep_alive: typeof s.keep_alive === 'number' ? String(s.keep_alive) : str(s.keep_alive),
      context_size: num(s.context_size) ?? 0,
      tools: str(s.tools),
      auto: bool(s.auto),
      reuse: bool(s.reuse),
      completion_model: str(s.completion_model)
    },
    models: Array.isArray(v.models) ? v.models.map(parseModel).filter((e): e is ModelEntry => e !== null) : [],
    problems,
    options: {
      keep_alive: pairs(o.keep_alive, isString),
      context_sizes: Array.isArray(o.context_sizes)
        ? o.context_sizes.filter((n): n is number => typeof n === 'number' && Number.isFinite(n))
        : [],
      efforts: pairs(o.efforts, isString),
      tool_sources: Array.isArray(o.tool_sources)
        ? o.tool_sources
            .filter(isObject)
            .filter(t => typeof t.name === 'string' && t.name)
            .map(t => ({ name: t.name as string, description: str(t.description), on: bool(t.on) }))
        : [],
      completion_models: strings(o.completion_models).filter(Boolean)
    },
    offered_tools: strings(v.offered_tools),
    consent: parseConsent(v.consent),
    completion: isObject(v.completion)
      ? { model: str(v.completion.model), why: str(v.completion.why), on: bool(v.completion.on) }
      : { model: '', why: '', on: false }
  };
}

/** What the notebook proposes beyond what you allowed; nothing proposed when it is missing or malformed. */
export function parseConsent(v: unknown): ConsentState {
  const c = isObject(v) ? v : {};
  const proposed = strings(c.proposed).filter(Boolean).slice(0, 50);
  return { proposed, text: proposed.length ? str(c.text) : '', notebook: str(c.notebook) };
}

/** A message from the kernel, checked; null for anything unknown or malformed. */
export function parseKernelMessage(data: unknown): KernelMessage | null {
  if (!isObject(data)) {
    return null;
  }
  switch (data.type) {
    case 'state': {
      const state = parseMenuState(data.state);
      return state ? { type: 'state', version: num(data.version) ?? PROTOCOL_VERSION, state } : null;
    }
    case 'binding':
      return { type: 'binding', binding: cleanBinding(data.binding) };
    case 'error':
      return { type: 'error', message: str(data.message, 'error') || 'error' };
    case 'preview':
      return typeof data.id === 'string' && data.id
        ? { type: 'preview', id: data.id, markdown: str(data.markdown), text: str(data.text) }
        : null;
    case 'edit':
      return parseEdit(data);
    case 'edit_cancel':
      return typeof data.id === 'string' && data.id ? { type: 'edit_cancel', id: data.id } : null;
    case 'completion':
      return typeof data.id === 'string' && data.id
        ? { type: 'completion', id: data.id, text: str(data.text), reason: str(data.reason) }
        : null;
    case 'rewrite':
      return typeof data.id === 'string' && data.id
        ? { type: 'rewrite', id: data.id, source: str(data.source), reason: str(data.reason) }
        : null;
    default:
      return null;
  }
}

const CELL_TYPES: readonly string[] = ['code', 'markdown'];

/** An `edit` request, checked; one with an id but bad fields becomes `op: 'invalid'` (refused, with the reason). */
function parseEdit(data: Json): IEditMessage | null {
  const id = data.id;
  if (typeof id !== 'string' || !id) {
    return null; // nothing to answer to
  }
  const bad = (problem: string): IBadEdit => ({ type: 'edit', id, op: 'invalid', problem });
  const strings = (...keys: string[]) => keys.find(k => typeof data[k] !== 'string');
  if (data.prompt !== undefined && data.prompt !== null && (typeof data.prompt !== 'string' || data.prompt.length > 200)) {
    return bad('`prompt` must be a cell id');
  }
  const prompt = typeof data.prompt === 'string' && data.prompt ? { prompt: data.prompt } : {};
  if (data.op === 'add') {
    const missing = strings('after', 'source');
    if (missing) {
      return bad(`\`${missing}\` must be text`);
    }
    const cellType = data.cell_type ?? 'code';
    if (typeof cellType !== 'string' || !CELL_TYPES.includes(cellType)) {
      return bad("`cell_type` must be 'code' or 'markdown'");
    }
    return {
      type: 'edit',
      id,
      op: 'add',
      ...prompt,
      after: data.after as string,
      source: data.source as string,
      cell_type: cellType as 'code' | 'markdown'
    };
  }
  if (data.op === 'edit') {
    const missing = strings('cell', 'source', 'expect');
    if (missing) {
      return bad(`\`${missing}\` must be text`);
    }
    return {
      type: 'edit',
      id,
      op: 'edit',
      ...prompt,
      cell: data.cell as string,
      source: data.source as string,
      expect: data.expect as string
    };
  }
  if (data.op === 'run') {
    const missing = strings('source', 'agent');
    if (missing) {
      return bad(`\`${missing}\` must be text`);
    }
    const reason = typeof data.reason === 'string' ? data.reason.slice(0, 200) : '';
    // anything but an explicit false asks every time
    return { type: 'edit', id, op: 'run', ...prompt, source: data.source as string, agent: data.agent as string, attend: data.attend !== false, reason };
  }
  if (data.op === 'delete') {
    const missing = strings('cell', 'expect');
    if (missing) {
      return bad(`\`${missing}\` must be text`);
    }
    return { type: 'edit', id, op: 'delete', ...prompt, cell: data.cell as string, expect: data.expect as string };
  }
  return bad(`unknown op ${JSON.stringify(typeof data.op === 'string' ? data.op.slice(0, 40) : data.op ?? null)}`);
}

export function parseWidgetPlaceholder(data: unknown): WidgetPlaceholder | null {
  if (!isObject(data) || typeof data.kind !== 'string') {
    return null;
  }
  return { version: num(data.version) ?? 1, kind: data.kind };
}

/** A reply's blocks: `blocks` as sent (strings only), else an older reply's whole `markdown` as one block. */
function replyBlocks(data: Json): string[] {
  if (Array.isArray(data.blocks)) {
    return strings(data.blocks).filter(b => b.trim());
  }
  const markdown = str(data.markdown);
  return markdown.trim() ? [markdown] : [];
}

/** A reply bundle with every field of its kind present and typed; null if it is not one. */
export function parseReplyBundle(data: unknown): ReplyBundle | null {
  if (!isObject(data)) {
    return null;
  }
  const version = num(data.version) ?? 1;
  if (data.kind === 'tool_round') {
    const steps = Array.isArray(data.steps) ? data.steps.filter(isObject) : [];
    return {
      version,
      kind: 'tool_round',
      round: num(data.round) ?? 0,
      steps: steps.map(s => ({
        status: str(s.status),
        source: str(s.source),
        result: str(s.result),
        flags: strings(s.flags),
        recovered: bool(s.recovered)
      }))
    };
  }
  if (data.kind === 'tool_loop') {
    const steps = Array.isArray(data.steps) ? data.steps.filter(isObject) : [];
    return {
      version,
      kind: 'tool_loop',
      stop: str(data.stop),
      note: str(data.note),
      rounds: num(data.rounds) ?? 0,
      steps: steps.map(s => ({ round: num(s.round) ?? 0, source: str(s.source), status: str(s.status) }))
    };
  }
  const reply: ReplyData = {
    version,
    kind: 'reply',
    model: str(data.model),
    status: (str(data.status, 'done') || 'done') as ReplyStatus,
    blocks: replyBlocks(data),
    open: bool(data.open),
    reasoning: str(data.reasoning),
    reasoning_label: str(data.reasoning_label),
    reasoning_streaming: bool(data.reasoning_streaming),
    reused: bool(data.reused),
    summary: str(data.summary),
    details: strings(data.details)
  };
  for (const k of ['finish_reason', 'note', 'warning', 'cell_id', 'kept', 'stale', 'fixes'] as const) {
    if (typeof data[k] === 'string' && data[k]) {
      reply[k] = data[k] as string;
    }
  }
  const ran = strings(data.ran_blocks);
  if (ran.length) {
    reply.ran_blocks = ran;
  }
  const previous = data.previous;
  if (isObject(previous) && typeof previous.answer === 'string' && previous.answer.trim()) {
    reply.previous = { model: str(previous.model), answer: previous.answer };
  }
  return reply;
}
