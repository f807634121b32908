// @vitest-environment jsdom
/**
 * The brain menu sends each option's value exactly as the kernel's state lists it (issue 23.1): the keep-alive, the
 * context size and the effort a user chooses reach the kernel as that option's value, never its label or a neighbour's.
 * What each value then does to the request (`forever` keeps the model loaded: -1 on the wire to Ollama) is
 * tests/test_protocol_schema.py's half.
 */

import { describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  const g = globalThis as any;
  g.DragEvent ??= class extends g.MouseEvent {}; // lumino's widgets extend it; jsdom has none
});
// the brain icon's module loads JupyterLab's web components, which node cannot: a plain span draws it here
vi.mock('../../src/icons', () => ({ brainIcon: { element: () => document.createElement('span') } }));

import { BrainMenuPanel } from '../../src/menu/panel';
import { BindingChanges, MenuSettings, MenuState } from '../../src/protocol/messages';

/** The options as core/menu.py lists them (labels, then values). */
const OPTIONS = {
  keep_alive: [['default', ''], ['unload after each reply', '0'], ['1 min', '1'], ['5 min', '5'], ['15 min', '15'],
    ['1 hour', '60'], ['forever', '-1']] as [string, string][],
  context_sizes: [2048, 4096, 8192, 16384, 32768, 65536, 131072],
  efforts: [['auto', ''], ['L', 'l'], ['M', 'm'], ['H', 'h']] as [string, string][],
  tool_sources: [{ name: 'kernel', description: 'Variables and cells', on: true }],
  completion_models: ['qwen2.5-coder:0.5b', 'local/smollm2-135m']
};

function menuState(settings: Partial<MenuSettings>): MenuState {
  return {
    answering: { model: 'gemma3:4b', why: 'notebook binding', auto: false, reasoning: true, window: 4096, context_length: 131072 },
    settings: { model: 'gemma3:4b', reasoning_model: 'qwen3:1.7b', reasoning: true, think: '', keep_alive: '', context_size: 0,
      tools: '', auto: false, reuse: true, completion_model: '', ...settings },
    models: [
      { id: 'gemma3:4b', label: 'gemma3:4b', source: 'ollama', capabilities: ['completion', 'vision'], context_length: 131072 },
      { id: 'qwen3:1.7b', label: 'qwen3:1.7b', source: 'ollama', capabilities: ['completion', 'thinking'], context_length: 40960 }
    ],
    problems: {},
    options: OPTIONS,
    offered_tools: [],
    consent: { proposed: [], text: '', notebook: '' },
    completion: { model: 'qwen2.5-coder:0.5b', why: 'auto: the smallest model with fill-in-the-middle', on: true }
  };
}

/** The panel over a channel that records the picks it is asked to send. */
function panel(settings: Partial<MenuSettings>) {
  const picks: BindingChanges[] = [];
  const channel = {
    state: { phase: 'ready', menu: menuState(settings), pending: [], error: '', language: '' },
    pick: (changes: BindingChanges) => picks.push(changes),
    refresh: () => undefined,
    allow: () => undefined
  };
  const agents: number[] = [];
  const notebook = { load: () => undefined, needsLoadCell: () => false, addLoadCell: () => undefined, insertAgent: () => agents.push(1) };
  const p = new BrainMenuPanel(channel as any, notebook, document.createElement('button'), 'boop-menu-test', () => undefined);
  return { p, picks, agents };
}

/** Choose `value` in the menu's select for `key`, as a user does. */
function choose(p: BrainMenuPanel, key: string, value: string): void {
  const select = p.node.querySelector(`select[data-pick="${key}"]`) as HTMLSelectElement;
  select.value = value;
  expect(select.value).toBe(value); // the option is there
  select.dispatchEvent(new Event('change', { bubbles: true }));
}

describe('the brain menu sends the value of the option chosen', () => {
  it('for every keep-alive option, by its label', () => {
    for (const [label, value] of OPTIONS.keep_alive) {
      const { p, picks } = panel({ keep_alive: value === '5' ? '1' : '5' });
      const option = Array.from(p.node.querySelectorAll('select[data-pick="keep_alive"] option')).find(o => o.textContent === label);
      expect((option as HTMLOptionElement).value).toBe(value);
      choose(p, 'keep_alive', value);
      expect(picks).toEqual([{ keep_alive: value || null }]); // default: no pick, the settings apply
      p.dispose();
    }
    expect(OPTIONS.keep_alive.find(([label]) => label === 'forever')![1]).toBe('-1');
  });

  it('for every context size the model takes, and auto', () => {
    for (const n of [...OPTIONS.context_sizes, 0]) {
      const { p, picks } = panel({ context_size: n === 8192 ? 4096 : 8192 });
      choose(p, 'context_size', String(n));
      expect(picks).toEqual([{ context_size: n || null }]);
      p.dispose();
    }
  });

  it('for every completion model, and auto (which names the one it picks)', () => {
    for (const value of [...OPTIONS.completion_models, '']) {
      const { p, picks } = panel({ completion_model: value ? '' : 'local/smollm2-135m' });
      choose(p, 'completion_model', value);
      expect(picks).toEqual([{ completion_model: value || null }]);
      p.dispose();
    }
    const { p } = panel({});
    const auto = p.node.querySelector('select[data-pick="completion_model"] option') as HTMLOptionElement;
    expect(auto.textContent).toBe('auto: qwen2.5-coder:0.5b');
    p.dispose();
  });

  it('for every effort', () => {
    for (const [label, value] of OPTIONS.efforts) {
      const { p, picks } = panel({ think: 'off' });
      const chip = p.node.querySelector(`[data-think="${value}"]`) as HTMLButtonElement;
      expect(chip.textContent).toContain(label);
      chip.click();
      expect(picks).toEqual([{ think: value || null }]);
      p.dispose();
    }
  });
});

describe("the brain menu's footer", () => {
  it('inserts an agent prompt cell, and picks nothing', () => {
    const { p, picks, agents } = panel({});
    const button = p.node.querySelector('[data-action="agent"]') as HTMLButtonElement;
    expect(button.textContent).toBe('+ Agent prompt');
    button.click();
    expect(agents).toEqual([1]);
    expect(picks).toEqual([]);
    p.dispose();
  });
});
