/**
 * The messages boopiter's kernel half and this frontend exchange on the comm, as types.
 *
 * One comm target, `boopiter`, in both directions (kernel side: `boopiter_ext/faces/channel.py`, whose docstring is
 * authoritative):
 *
 *   frontend → kernel   {type: 'hello', version, binding, cells}  (on every kernel connection: the open data of the
 *                                                        comm the frontend opens, or the first message on a comm
 *                                                        the kernel opened when boopiter loaded)
 *                       {type: 'notebook', cells}             (the notebook as shown, unsaved edits and tags
 *                                                        included: on changes, and before a prompt cell runs)
 *                       {type: 'refresh'}                    (list the models again)
 *                       {type: 'pick', changes}              (a null value removes that pick; a click: what it turns
 *                                                        on of auto-run and the outward tools is yours for the notebook)
 *                       {type: 'allow', items}               (the menu's Allow: accept what the notebook proposes, as
 *                                                        the menu showed it, for this notebook on this machine)
 *                       {type: 'preview', id, source}        (a prompt cell's dry run)
 *                       {type: 'edit_result', id, ok, message, status?, cell?} (what the notebook did with an
 *                                                        `edit`; a `run`: ran, skipped or stopped, and the cell)
 *                       {type: 'stop', cell_id}              (the reply view's Stop: the reply streaming in that cell
 *                                                        ends now, the cell without an error; over the comm's
 *                                                        subshell, so the kernel reads it while the cell runs)
 *                       {type: 'fresh', cell_id}             (the reply view's Ask again: the next run of that prompt
 *                                                        cell asks the model whatever it saved; sent before the run)
 *   kernel → frontend   {type: 'state', version, state}      (after hello, pick, refresh, any settings change, and
 *                                                        when a prompt found its server down or back up)
 *                       {type: 'binding', binding}           (after a pick: saved in `metadata.boopiter.binding`)
 *                       {type: 'preview', id, markdown, text} (the dry run: Markdown rendered untrusted)
 *                       {type: 'edit', id, op: 'add', after, source, cell_type, prompt?}
 *                       {type: 'edit', id, op: 'edit', cell, source, expect, prompt?}
 *                       {type: 'edit', id, op: 'delete', cell, expect, prompt?}  (a change the model's notebook
 *                                                        tools ask for, allowed by the kernel's guards; an edit or
 *                                                        a deletion is then reviewed by the user in the cell)
 *                       {type: 'edit', id, op: 'run', source, agent, attend, reason, prompt?}  (agent mode: the
 *                                                        model's cell below the prompt, run on the user's click)
 *                       {type: 'edit_cancel', id}            (the kernel stopped waiting: the review is withdrawn)
 *                       {type: 'error', message}
 *
 * Everything that arrives is untrusted data: `parseKernelMessage` and `cleanBinding` (`parse.ts`) keep only
 * values of the expected types, and the views only ever set it as text. The names (`COMM_TARGET`,
 * `PROTOCOL_VERSION`, the mime types) are in `constants.ts`, the mime bundles in `bundles.ts`.
 */

export type Think = 'l' | 'm' | 'h' | 'off';

/** The picks a notebook carries (`metadata.boopiter.binding`); an empty object means none. */
export interface Binding {
  model?: string;
  reasoning_model?: string;
  reasoning?: boolean;
  think?: Think;
  keep_alive?: string;
  context_size?: number;
  tools?: string;
  auto?: boolean;
  reuse?: boolean;
  completion_model?: string;
  picked_at?: string;
}

/** A pick: the keys to change; null removes that key from the binding. */
export type BindingChanges = { [K in keyof Binding]?: Binding[K] | null };

export type ModelSource = 'ollama' | 'endpoint' | 'declared' | 'local' | 'deaddrop';

export interface ModelEntry {
  id: string;
  label: string;
  source: ModelSource;
  capabilities: string[];
  size?: number;
  context_length?: number;
  offline?: string;
  note?: string;
}

export interface Answering {
  model: string;
  why: string;
  /** Nothing is picked: the kernel chose `model` by itself, and `why` says `auto: why this one`. */
  auto: boolean;
  /** The context window the next request asks for (`num_ctx`): the number its reply details will give. */
  window?: number;
  /** The most the model takes (the menu's context sizes stop there). */
  context_length?: number;
  size?: number;
  reasoning: boolean;
}

export interface MenuSettings {
  model: string;
  reasoning_model: string;
  reasoning: boolean;
  think: string;
  keep_alive: string;
  context_size: number;
  tools: string;
  auto: boolean;
  reuse: boolean;
  completion_model: string;
}

export type LabelValue<T> = [string, T];

export interface ToolSourceOption {
  name: string;
  description: string;
  on: boolean;
}

export interface MenuOptions {
  keep_alive: LabelValue<string>[];
  context_sizes: number[];
  efforts: LabelValue<string>[];
  tool_sources: ToolSourceOption[];
  /** The models the menu offers for completions: those with fill-in-the-middle, then the embedded one. */
  completion_models: string[];
}

/** Ghost-text completions: the model that gives them now and why, or why none does (`on` false). */
export interface Completing {
  model: string;
  why: string;
  on: boolean;
}

/**
 * What the notebook (its binding) or its project's settings.ini proposes beyond what you allowed: auto-run and the tool
 * sources that act or reach outside are off until you accept them (`boopiter_ext/core/consent.py`).
 */
export interface ConsentState {
  /** The items proposed and not allowed (`auto`, `web`, `notebook`, ...); empty when there is nothing to accept. */
  proposed: string[];
  /** One line saying so: "This notebook asks for auto-run and the web tool; allowed here: kernel, files". */
  text: string;
  /** The notebook's file name, where an acceptance is remembered; '' when the kernel does not know it. */
  notebook: string;
}

export interface MenuState {
  answering: Answering;
  settings: MenuSettings;
  models: ModelEntry[];
  problems: { [source: string]: string };
  options: MenuOptions;
  offered_tools: string[];
  consent: ConsentState;
  completion: Completing;
}

/** One cell as the frontend shows it (nbformat's `cell_type`; only code and Markdown cells are sent). */
export interface ShownCell {
  id: string;
  cell_type: 'code' | 'markdown';
  source: string;
  tags: string[];
}

export interface IHelloMessage {
  type: 'hello';
  version: number;
  binding: Binding | null;
  cells: ShownCell[];
}
export interface INotebookMessage {
  type: 'notebook';
  cells: ShownCell[];
}
export interface IPreviewRequest {
  type: 'preview';
  id: string;
  source: string;
}
export interface IEditResultMessage {
  type: 'edit_result';
  id: string;
  ok: boolean;
  message: string;
  /** A `run`'s: what became of the cell, and its id. */
  status?: 'ran' | 'skipped' | 'stopped';
  cell?: string;
}
export interface IRefreshMessage {
  type: 'refresh';
}
export interface IPickMessage {
  type: 'pick';
  changes: BindingChanges;
}
/** The menu's Allow: the proposed items as the menu showed them (the kernel accepts those still proposed). */
export interface IAllowMessage {
  type: 'allow';
  items: string[];
}
/** The reply view's Stop: the reply streaming in cell `cell_id` (its frontend id) ends now, as interrupted. */
export interface IStopMessage {
  type: 'stop';
  cell_id: string;
}
/** The reply view's Ask again: the next run of prompt cell `cell_id` asks the model, whatever reply it saved. */
export interface IFreshMessage {
  type: 'fresh';
  cell_id: string;
}
/** Ghost text at the cursor of code cell `cell_id`: its text before and after the cursor. */
export interface ICompleteRequest {
  type: 'complete';
  id: string;
  cell_id: string;
  prefix: string;
  suffix: string;
}
/** Edit this cell: the user's instruction and the cell as it stands. */
export interface IRewriteRequest {
  type: 'rewrite';
  id: string;
  cell_id: string;
  instruction: string;
  source: string;
}
export type FrontendMessage =
  | ICompleteRequest
  | IRewriteRequest
  | IStopMessage
  | IFreshMessage
  | IHelloMessage
  | INotebookMessage
  | IRefreshMessage
  | IPickMessage
  | IAllowMessage
  | IPreviewRequest
  | IEditResultMessage;

export interface IStateMessage {
  type: 'state';
  version: number;
  state: MenuState;
}
export interface IBindingMessage {
  type: 'binding';
  binding: Binding;
}
export interface IErrorMessage {
  type: 'error';
  message: string;
}
/** A dry run: what a prompt would send, as Markdown (rendered untrusted) and as plain text. */
export interface IPreview {
  markdown: string;
  text: string;
}
/** A dry run's answer. */
export interface IPreviewMessage {
  type: 'preview';
  id: string;
  markdown: string;
  text: string;
}
export interface IAddCellEdit {
  type: 'edit';
  id: string;
  op: 'add';
  /** The prompt cell whose reply asks for it (its changes are undone together), if the kernel knows it. */
  prompt?: string;
  /** The id of the cell the new one goes below. */
  after: string;
  source: string;
  cell_type: 'code' | 'markdown';
}
export interface IEditCellEdit {
  type: 'edit';
  id: string;
  op: 'edit';
  prompt?: string;
  /** The id of the cell whose text is replaced. */
  cell: string;
  source: string;
  /** The cell's text as the model read it: the edit is refused unless the cell still holds exactly this. */
  expect: string;
}
export interface IDeleteCellEdit {
  type: 'edit';
  id: string;
  op: 'delete';
  prompt?: string;
  cell: string;
  /** The cell's text as the model read it. */
  expect: string;
}
/** Agent mode: the model's cell, put below the prompt (after its earlier ones) and run once the user says. */
export interface IRunCellEdit {
  type: 'edit';
  id: string;
  op: 'run';
  prompt?: string;
  source: string;
  /** The agent loop asking: "Run the rest" holds for its later cells. */
  agent: string;
  /** Asked every time, whatever was allowed: the code reaches outside the kernel (`reason` says how). */
  attend: boolean;
  reason: string;
}
/** The changes the user reviews before they are made. */
export type IReviewedEdit = IEditCellEdit | IDeleteCellEdit;
/** The kernel stopped waiting for an edit (interrupted, or no answer in time): its review is withdrawn. */
export interface IEditCancelMessage {
  type: 'edit_cancel';
  id: string;
}
/** An edit the kernel asks for whose fields are missing or wrong: answered with a refusal. */
export interface IBadEdit {
  type: 'edit';
  id: string;
  op: 'invalid';
  problem: string;
}
export type IEditMessage = IAddCellEdit | IEditCellEdit | IDeleteCellEdit | IRunCellEdit | IBadEdit;
/** What `complete` answers: the ghost text ('' for none) and why there is none. */
export interface ICompletion {
  text: string;
  reason: string;
}
/** What `rewrite` answers: the cell's new version ('' for none) and why there is none. */
export interface IRewrite {
  source: string;
  reason: string;
}
/** A completion: the ghost text ('' for none) and why there is none. */
export interface ICompletionMessage {
  type: 'completion';
  id: string;
  text: string;
  reason: string;
}
/** Edit this cell's answer: the model's version of the cell ('' for none) and why there is none. */
export interface IRewriteMessage {
  type: 'rewrite';
  id: string;
  source: string;
  reason: string;
}
export type KernelMessage =
  | IStateMessage
  | IBindingMessage
  | IErrorMessage
  | IPreviewMessage
  | IEditMessage
  | IEditCancelMessage
  | ICompletionMessage
  | IRewriteMessage;
