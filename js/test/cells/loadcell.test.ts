import { describe, expect, it } from 'vitest';
import { isLoadSource, loadPlan, needsLoadCell } from '../../src/cells/loadplan';

const md = (source: string) => ({ type: 'markdown', source });
const code = (source: string) => ({ type: 'code', source });

describe('the load cell', () => {
  it('is a code cell with a %load_ext boopiter_ext line', () => {
    for (const yes of ['%load_ext boopiter_ext', '  %load_ext boopiter_ext  ', 'import os\n%load_ext boopiter_ext',
                       '%reload_ext boopiter_ext', '%load_ext boopiter_ext  # for the prompts']) {
      expect(isLoadSource(yes)).toBe(true);
    }
    for (const no of ['%load_ext boopiter_extra', '# %load_ext boopiter_ext', 'x = "%load_ext boopiter_ext"',
                      '%load_ext autoreload', '%%prompt\n%load_ext boopiter_ext?', '']) {
      expect(isLoadSource(no)).toBe(false);
    }
  });

  it('goes above the first code cell, once, and a late one is moved up', () => {
    const title = md('# Analysis');
    expect(loadPlan([title, code('x = 1'), code('%%prompt\nWhy?')])).toEqual({ firstPrompt: 2, load: -1, late: -1, insertAt: 1 });
    expect(loadPlan([title, code('%load_ext boopiter_ext'), code('%%prompt\nWhy?')]).load).toBe(1);
    expect(loadPlan([code('%%prompt\nWhy?'), code('%load_ext boopiter_ext')])).toEqual({ firstPrompt: 0, load: -1, late: 1, insertAt: 0 });
    expect(loadPlan([title])).toEqual({ firstPrompt: -1, load: -1, late: -1, insertAt: 1 });
    expect(loadPlan([])).toEqual({ firstPrompt: -1, load: -1, late: -1, insertAt: 0 });
    expect(loadPlan([code(''), code('%load_ext boopiter_ext')]).load).toBe(1);   // no prompt yet: anywhere counts
    expect(loadPlan([md('%load_ext boopiter_ext'), code('%%prompt\nq')]).load).toBe(-1);   // Markdown loads nothing
  });

  it('is needed where prompt cells have none above them', () => {
    expect(needsLoadCell([code('%%prompt\nq')])).toBe(true);
    expect(needsLoadCell([code('%load_ext boopiter_ext'), code('%%prompt\nq')])).toBe(false);
    expect(needsLoadCell([code('x = 1')])).toBe(false);                 // no prompt cell: nothing to rerun
    expect(needsLoadCell([code('%%prompt\nq'), code('%load_ext boopiter_ext')])).toBe(true);   // too late
    expect(needsLoadCell([code('%%promptly\nq')])).toBe(false);
  });
});
