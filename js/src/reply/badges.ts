/**
 * The marks a reply shows: its badges (how it ended, reused, kept, cut off) and the mark of each tool call (pure:
 * unit-tested).
 *
 * Every state that matters is said in text or a symbol, never by colour alone; `tone` only picks the
 * theme colour (`--jp-info-color1`, `--jp-warn-color1`, ...) that goes with it.
 */

import { ReplyData } from '../protocol/bundles';

export type Tone = 'info' | 'warn' | 'error' | 'success' | 'progress' | 'muted';

export interface Badge {
  icon: string;
  label: string;
  tone: Tone;
  /** A longer explanation for the tooltip. */
  title: string;
}

const STATUS_BADGES: { [status: string]: Badge } = {
  waiting: { icon: '⋯', label: 'waiting', tone: 'progress', title: 'The request is on its way; the model may be loading' },
  streaming: { icon: '●', label: 'streaming', tone: 'progress', title: 'The reply is arriving' },
  interrupted: { icon: '⏹', label: 'interrupted', tone: 'warn', title: 'Stopped before the model finished' },
  error: { icon: '✗', label: 'failed', tone: 'error', title: 'The model or its server answered with an error' },
  stalled: { icon: '⏱', label: 'timed out', tone: 'error', title: 'Nothing arrived for too long' },
  broken: { icon: '⚡', label: 'connection lost', tone: 'error', title: 'The connection to the model server broke' },
  'too long': { icon: '✂', label: 'too long', tone: 'warn', title: 'Stopped at the longest reply allowed (max_reply)' }
};

/** The badges a reply shows at a glance: how it ended, whether it was reused or cut off. */
export function replyBadges(r: Pick<ReplyData, 'status' | 'reused' | 'kept' | 'finish_reason'>): Badge[] {
  const out: Badge[] = [];
  if (r.reused) {
    out.push({
      icon: '♻',
      label: 'reused',
      tone: 'info',
      title: 'The saved reply to this same conversation, shown again (not asked again)'
    });
  }
  if (r.kept) {
    out.push({
      icon: '↺',
      label: 'kept',
      tone: 'info',
      title: `Written by another model and kept: this notebook now answers with ${r.kept}. Ask again with %%prompt --fresh.`
    });
  }
  const status = STATUS_BADGES[r.status];
  if (status) {
    out.push(status);
  }
  if (r.finish_reason === 'length') {
    out.push({ icon: '✂', label: 'cut off', tone: 'warn', title: 'The model stopped at its token limit (finish reason: length)' });
  }
  return out;
}

export function isLive(status: string): boolean {
  return status === 'waiting' || status === 'streaming';
}

export interface ToolMark {
  icon: string;
  tone: Tone;
}

/** How a tool call's status is marked: ok ✓, flagged ⚠, refused or invalid ✗, not run ○. */
export function toolMark(status: string): ToolMark {
  const s = status.toLowerCase();
  if (s === 'ok') {
    return { icon: '✓', tone: 'success' };
  }
  if (s === 'flagged') {
    return { icon: '⚠', tone: 'warn' };
  }
  if (s === 'not run' || s === 'pending' || s === 'waiting' || s === 'running' || s === '') {
    return { icon: '○', tone: 'muted' };
  }
  return { icon: '✗', tone: 'error' };
}
