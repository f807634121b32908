// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { INITIAL, reduce } from '../../src/channel/state';
import { buttonLabel } from '../../src/menu/labels';
import { consentSection } from '../../src/menu/sections';
import { parseConsent, parseMenuState } from '../../src/protocol/parse';

const TEXT = 'This notebook asks for auto-run and the web tool; allowed here: kernel, files';
const MENU = parseMenuState({
  answering: { model: 'qwen3:8b', why: 'notebook binding' },
  settings: { model: 'qwen3:8b', tools: 'kernel, files' },
  consent: { proposed: ['auto', 'web'], text: TEXT, notebook: 'nb.ipynb' }
})!;

describe('what a notebook proposes beyond what you allowed', () => {
  it('is read from the state, and is nothing when missing or malformed', () => {
    expect(MENU.consent).toEqual({ proposed: ['auto', 'web'], text: TEXT, notebook: 'nb.ipynb' });
    expect(parseMenuState({})!.consent).toEqual({ proposed: [], text: '', notebook: '' });
    for (const bad of [null, 'auto', 7, [], { proposed: 'auto', text: 'x' }, { proposed: [1, null, {}], text: 'x' }]) {
      expect(parseConsent(bad)).toEqual({ proposed: [], text: '', notebook: '' });
    }
    expect(parseConsent({ proposed: ['web', 3, ''], text: ['t'], notebook: 5 })).toEqual({ proposed: ['web'], text: '', notebook: '' });
  });

  it('the menu says it as text, with one button that accepts it', () => {
    expect(consentSection(parseMenuState({})!)).toBeNull();
    const hostile = { ...MENU, consent: { ...MENU.consent, text: '<img src="https://evil.example/x.png">' } };
    const section = consentSection(hostile)!;
    expect(section.querySelector('img')).toBeNull();
    expect(section.textContent).toContain('<img src="https://evil.example/x.png">');
    const shown = consentSection(MENU)!;
    expect(shown.getAttribute('role')).toBe('alert');
    expect(shown.querySelector('.boop-Menu-consentText')!.textContent).toBe(`⚠ ${TEXT}`);
    const buttons = shown.querySelectorAll('button');
    expect(buttons.length).toBe(1);
    expect(buttons[0].dataset.action).toBe('allow');
    expect(buttons[0].title).toBe('Accept it for nb.ipynb on this machine');
    const unknown = consentSection({ ...MENU, consent: { ...MENU.consent, notebook: '' } })!;
    expect(unknown.querySelector('button')!.title).toContain('this kernel');
  });

  it('the toolbar button warns and says it in its title', () => {
    const ready = reduce(reduce(INITIAL, { type: 'kernel', present: true }), { type: 'message', msg: { type: 'state', version: 1, state: MENU } });
    expect(buttonLabel(ready).warn).toBe(true);
    expect(buttonLabel(ready).title).toContain(TEXT);
    const none = { ...MENU, consent: { proposed: [], text: '', notebook: 'nb.ipynb' } };
    const calm = reduce(ready, { type: 'message', msg: { type: 'state', version: 1, state: none } });
    expect(buttonLabel(calm).warn).toBe(false);
  });
});
