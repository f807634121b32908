/**
 * The mime bundles the kernel displays and this frontend renders: the streamed reply, its tool rounds and tool loop
 * (`REPLY_MIME`), the binding `%boop` shows (`SETTINGS_MIME`) and the widget placeholders (`WIDGET_MIME`).
 */

import { Binding } from './messages';

export type ReplyStatus =
  | 'waiting'
  | 'streaming'
  | 'done'
  | 'interrupted'
  | 'broken'
  | 'stalled'
  | 'error'
  | 'too long';

export interface ReplyData {
  version: number;
  kind: 'reply';
  model: string;
  status: ReplyStatus;
  finish_reason?: string;
  /**
   * The answer as the kernel made it safe: its top-level blocks, each rebuilt and checked by the kernel's sanitizer
   * on its own, rendered one by one as they are (never split again). A saved reply of an older version (or one
   * written by hand) has only `markdown`: that is one block.
   */
  blocks: string[];
  /** The last block is a code fence the model has not closed yet (the reply still streams). */
  open: boolean;
  reasoning: string;
  reasoning_label: string;
  reasoning_streaming: boolean;
  note?: string;
  warning?: string;
  reused: boolean;
  /** A saved reply kept although another model answers now: that model's id. */
  kept?: string;
  /** A saved reply kept although its context changed since it was made: what changed, and how to ask again. */
  stale?: string;
  /** The reply this one replaced (asked again), kept to recover it. */
  previous?: PreviousReply;
  summary: string;
  details: string[];
  cell_id?: string;
  /** Python blocks of this answer the tool loop (auto mode) ran already: offered without "Insert and run". */
  ran_blocks?: string[];
  /** The id of the cell this reply answers `%%prompt --fix` about: its python blocks offer to replace that cell. */
  fixes?: string;
}

export interface PreviousReply {
  model: string;
  answer: string;
}

export interface ToolStep {
  status: string;
  source: string;
  result: string;
  flags: string[];
  recovered: boolean;
}

export interface ToolRoundData {
  version: number;
  kind: 'tool_round';
  round: number;
  steps: ToolStep[];
}

export interface ToolLoopStep {
  round: number;
  source: string;
  status: string;
}

export interface ToolLoopData {
  version: number;
  kind: 'tool_loop';
  stop: string;
  note: string;
  rounds: number;
  steps: ToolLoopStep[];
}

export type ReplyBundle = ReplyData | ToolRoundData | ToolLoopData;

/** The binding display `%boop` shows (application/vnd.boopiter.settings+json). */
export interface SettingsData extends Binding {
  version: number;
}

/** The kernel's widget placeholder (`WIDGET_MIME`): which widget it stands for; null if unreadable. */
export interface WidgetPlaceholder {
  version: number;
  kind: string;
}
