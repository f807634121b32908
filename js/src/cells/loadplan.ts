/**
 * The notebook's own load cell: `%load_ext boopiter_ext`, a real code cell above the first prompt cell, so the
 * notebook records that it uses boopiter and any Jupyter (nbclient, papermill, VS Code, Run All after a restart) runs it
 * top to bottom. The menu's "Load boopiter" and the first prompt cell put one in (once) and run it (`loadcell.ts`);
 * `loadPlan` says whether one is there and where one goes (pure: unit-tested).
 */

import { isPromptSource } from './prompt';

/** The load cell's source. */
export const LOAD_CELL = '%load_ext boopiter_ext';

const LOAD_LINE = /^[ \t]*%(?:re)?load_ext[ \t]+boopiter_ext[ \t]*(?:#.*)?$/m;

/** Whether a code cell's source loads boopiter: a line `%load_ext boopiter_ext` (or `%reload_ext`). */
export function isLoadSource(source: string): boolean {
  return LOAD_LINE.test(source);
}

/** A cell as `loadPlan` reads it. */
export interface IPlanCell {
  type: string;
  source: string;
}

export interface ILoadPlan {
  /** The first prompt cell's index; -1 when there is none. */
  firstPrompt: number;
  /** The load cell that comes first, above the first prompt cell (or anywhere, without prompt cells); -1: none. */
  load: number;
  /** A load cell below the first prompt cell (it would run too late): moved up rather than written twice; -1: none. */
  late: number;
  /** Where a load cell goes: above the first code cell (below a leading title), else at the end. */
  insertAt: number;
}

/** Where the notebook stands with its load cell. */
export function loadPlan(cells: IPlanCell[]): ILoadPlan {
  const code = (c: IPlanCell) => c.type === 'code';
  const firstPrompt = cells.findIndex(c => code(c) && isPromptSource(c.source));
  const end = firstPrompt >= 0 ? firstPrompt : cells.length;
  const loads = cells.map((c, i) => (code(c) && isLoadSource(c.source) ? i : -1)).filter(i => i >= 0);
  const load = loads.find(i => i < end) ?? -1;
  const late = load < 0 ? (loads.find(i => i > end) ?? -1) : -1;
  const firstCode = cells.findIndex(code);
  return { firstPrompt, load, late, insertAt: firstCode >= 0 ? firstCode : cells.length };
}

/** Whether a notebook with prompt cells lacks a load cell above them: only a frontend that loads boopiter runs it. */
export function needsLoadCell(cells: IPlanCell[]): boolean {
  const plan = loadPlan(cells);
  return plan.firstPrompt >= 0 && plan.load < 0;
}

