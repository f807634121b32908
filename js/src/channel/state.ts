/**
 * What the brain menu knows about the kernel, as a pure reducer (no Jupyter imports: unit-tested).
 *
 *   nokernel     no kernel (or it died)
 *   connecting   hello sent; waiting for the kernel's first state (or for the comm to be closed)
 *   absent       the kernel has no boopiter loaded: offer "Load boopiter"
 *   loading      `%load_ext boopiter_ext` is running
 *   ready        a live comm; `menu` is the kernel's state
 *   unsupported  not an IPython kernel
 */

import { Binding, BindingChanges, KernelMessage, MenuSettings, MenuState } from '../protocol/messages';

export type Phase = 'nokernel' | 'connecting' | 'absent' | 'loading' | 'ready' | 'unsupported';

export interface ChannelState {
  phase: Phase;
  /** The kernel's last state; kept while reconnecting so the button does not flicker. */
  menu: MenuState | null;
  /**
   * Picks sent and not yet answered, oldest first: shown at once. The kernel answers each pick with one state, in
   * order, so a state answering an earlier pick leaves a later one showing.
   */
  pending: BindingChanges[];
  error: string;
  /** The kernel's language when it is not Python. */
  language: string;
}

export type ChannelEvent =
  | { type: 'kernel'; present: boolean }
  | { type: 'hello' }
  | { type: 'closed' }
  | { type: 'message'; msg: KernelMessage }
  | { type: 'load' }
  | { type: 'loaded' }
  | { type: 'load-failed'; error: string }
  | { type: 'unsupported'; language: string }
  | { type: 'pick'; changes: BindingChanges };

export const INITIAL: ChannelState = { phase: 'nokernel', menu: null, pending: [], error: '', language: '' };

export function reduce(s: ChannelState, e: ChannelEvent): ChannelState {
  switch (e.type) {
    case 'kernel':
      return e.present ? { ...s, phase: 'connecting', pending: [], error: '' } : { ...INITIAL };
    case 'hello':
      return s.phase === 'ready' ? s : { ...s, phase: 'connecting' };
    case 'closed':
      return { ...s, phase: 'absent', menu: null, pending: [] };
    case 'load':
      return { ...s, phase: 'loading', error: '' };
    case 'loaded':
      return s.phase === 'loading' ? { ...s, phase: 'connecting' } : s;
    case 'load-failed':
      return { ...s, phase: 'absent', error: e.error };
    case 'unsupported':
      return { ...INITIAL, phase: 'unsupported', language: e.language };
    case 'pick':
      return s.phase === 'ready' ? { ...s, pending: [...s.pending, e.changes] } : s;
    case 'message':
      switch (e.msg.type) {
        case 'state':
          return { ...s, phase: 'ready', menu: e.msg.state, pending: s.pending.slice(1), error: '' };
        case 'error':
          return { ...s, pending: [], error: e.msg.message };
        default:
          return s;
      }
  }
}

/** The settings as the menu should show them: the kernel's, with picks still in flight applied. */
export function effectiveSettings(s: ChannelState): MenuSettings | null {
  if (!s.menu) {
    return null;
  }
  const out = { ...s.menu.settings };
  for (const [k, v] of Object.entries(Object.assign({}, ...s.pending) as BindingChanges)) {
    const key = k as keyof MenuSettings;
    if (!(key in out)) {
      continue;
    }
    // a removed pick shows as "default" until the kernel says what the default resolves to
    const empty = typeof out[key] === 'boolean' ? false : typeof out[key] === 'number' ? 0 : '';
    (out as Record<string, unknown>)[key] = v === null ? empty : v;
  }
  return out;
}

/** The metadata entry after a `binding` message: the binding replaced (an empty one removed), the rest kept. */
export function withBinding(entry: unknown, binding: Binding): { [key: string]: unknown } {
  const base = typeof entry === 'object' && entry !== null && !Array.isArray(entry) ? { ...entry } : {};
  const out: { [key: string]: unknown } = base;
  if (Object.keys(binding).length) {
    out.binding = binding;
  } else {
    delete out.binding;
  }
  return out;
}
