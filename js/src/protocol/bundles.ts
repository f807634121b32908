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
  markdown: string;
  reasoning: string;
  reasoning_label: string;
  reasoning_streaming: boolean;
  note?: string;
  warning?: string;
  reused: boolean;
  /** A saved reply kept although another model answers now: that model's id. */
  kept?: string;
  summary: string;
  details: string[];
  cell_id?: string;
  /** Python blocks of this answer the tool loop (auto mode) ran already: offered without "Insert and run". */
  ran_blocks?: string[];
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
