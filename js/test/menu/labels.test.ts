import { describe, expect, it } from 'vitest';
import { INITIAL, reduce } from '../../src/channel/state';
import {
  answeringText,
  bindingText,
  buttonLabel,
  capabilities,
  contextLabel,
  humanSize,
  modelDescription,
  statusLine,
  toolsSetting
} from '../../src/menu/labels';
import { parseMenuState } from '../../src/protocol/parse';

describe('sizes', () => {
  it('humanSize matches the kernel (decimal units)', () => {
    expect(humanSize(1_359_000_000)).toBe('1.4 GB');
    expect(humanSize(999)).toBe('999 B');
    expect(humanSize(12_345)).toBe('12 KB');
    expect(humanSize(undefined)).toBe('');
  });

  it('contextLabel: auto, k for multiples of 1024, commas otherwise', () => {
    expect(contextLabel(0)).toBe('auto');
    expect(contextLabel(8192)).toBe('8k');
    expect(contextLabel(40960)).toBe('40k');
    expect(contextLabel(10000)).toBe('10,000');
  });
});

describe('bindingText', () => {
  it('reads as the kernel writes it', () => {
    expect(bindingText({})).toBe('boopiter binding · none (settings.ini and defaults apply)');
    expect(bindingText({ model: 'qwen3:1.7b', picked_at: 'x' })).toBe('boopiter binding · model qwen3:1.7b');
    expect(
      bindingText({ reasoning_model: 'r1', reasoning: true, think: 'h', keep_alive: '5', context_size: 8192, tools: 'kernel', auto: true, reuse: false })
    ).toBe(
      'boopiter binding · model from settings · reasoning on (r1, effort h) · keep-alive 5 min · context 8,192 tokens · tools kernel · auto-run tool calls · every prompt asks the model'
    );
    expect(bindingText({ keep_alive: '-1', context_size: 0 })).toBe('boopiter binding · model from settings · keep loaded forever · context auto');
  });
});

const MENU = parseMenuState({
  answering: { model: 'qwen3:8b', why: 'notebook binding', context_length: 40960, size: 5_200_000_000, reasoning: false },
  settings: { model: 'qwen3:8b' },
  models: [
    { id: 'qwen3:8b', label: 'qwen3:8b', source: 'ollama', capabilities: ['completion', 'tools', 'thinking'], size: 5_200_000_000 },
    { id: 'llava', label: 'llava', source: 'ollama', capabilities: ['vision'] },
    { id: 'gpt', label: 'gpt', source: 'endpoint', capabilities: [], offline: 'refused' }
  ],
  problems: {}
})!;

describe('menu labels', () => {
  it('statusLine says who answers, why, and what is in reach', () => {
    expect(statusLine(MENU)).toBe('answering: qwen3:8b (notebook binding) · 40,960-token context · 5.2 GB · models: 2 ollama, 1 endpoint');
  });

  it('statusLine gives one context, the window the request uses, and the size once', () => {
    const auto = parseMenuState({
      ...MENU,
      answering: { model: 'qwen3:8b', why: "auto: the first of Ollama's 3 chat models: calls tools, 5.2 GB", auto: true,
                   window: 4096, context_length: 40960, size: 5_200_000_000 }
    })!;
    const line = statusLine(auto);
    expect(line).toBe("answering: auto → qwen3:8b (the first of Ollama's 3 chat models: calls tools, 5.2 GB) · 4,096-token context · models: 2 ollama, 1 endpoint");
    expect(line.split('5.2 GB').length - 1).toBe(1);
    expect(line).not.toContain('40,960');
    const picked = parseMenuState({ ...MENU, answering: { ...auto.answering, auto: false, why: 'notebook binding', window: 8192 } })!;
    expect(statusLine(picked)).toBe('answering: qwen3:8b (notebook binding) · 8,192-token context · 5.2 GB · models: 2 ollama, 1 endpoint');
  });

  it('an automatic choice reads auto → model, with its reason once', () => {
    const a = { model: 'gemma3:4b', why: 'auto: the first of 3 chat models', auto: true };
    expect(answeringText(a)).toBe('auto → gemma3:4b (the first of 3 chat models)');
    expect(answeringText({ ...a, auto: false, why: 'notebook binding' })).toBe('gemma3:4b (notebook binding)');
    expect(answeringText({ model: '', why: 'no model in reach', auto: true })).toBe('none available (no model in reach)');
  });

  it('capabilities and descriptions', () => {
    expect(capabilities(MENU.models[0]).map(c => c.icon)).toEqual(['🔧', '🧠']);
    expect(modelDescription(MENU.models[2])).toBe('gpt, endpoint, offline: refused');
  });

  it('the button says who answers and warns about offline sources', () => {
    const ready = reduce(reduce(INITIAL, { type: 'kernel', present: true }), { type: 'message', msg: { type: 'state', version: 1, state: MENU } });
    expect(buttonLabel(ready)).toMatchObject({ text: 'qwen3:8b', warn: false });
    const offline = reduce(ready, { type: 'message', msg: { type: 'state', version: 1, state: { ...MENU, problems: { endpoint: 'down' } } } });
    expect(buttonLabel(offline).warn).toBe(true);
    expect(buttonLabel(offline).title).toContain('offline: endpoint: down');
    const picked = reduce(ready, { type: 'pick', changes: { model: 'llava' } });
    expect(buttonLabel(picked).text).toBe('llava');
    expect(buttonLabel(reduce(ready, { type: 'closed' })).text).toBe('Load boopiter');
    expect(buttonLabel(INITIAL)).toMatchObject({ text: 'no kernel', idle: true });
  });

  it('toolsSetting lists the sources on, or none', () => {
    expect(toolsSetting([{ name: 'kernel', on: true }, { name: 'files', on: true }])).toBe('kernel, files');
    expect(toolsSetting([{ name: 'kernel', on: false }])).toBe('none');
  });
});
