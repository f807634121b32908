// @vitest-environment jsdom
import { describe, expect, it, vi } from 'vitest';
import { flipTag, HIDE_LABEL, IMarkIcons, MarksControl, oneUndoStep, PIN_LABEL } from '../../src/cells/marks';
import { HIDE_TAG, IMetadataHolder, PIN_TAG } from '../../src/cells/tags';

const icon = (name: string) => () => {
  const e = document.createElement('span');
  e.dataset.icon = name;
  return e;
};
const ICONS: IMarkIcons = { hideOff: icon('eye'), hideOn: icon('eye-off'), pin: icon('pin') };

function control() {
  const toggled: string[] = [];
  const c = new MarksControl(tag => toggled.push(tag), ICONS);
  document.body.append(c.node);
  const button = (name: string) => c.node.querySelector<HTMLButtonElement>(`[data-boop-mark="${name}"]`)!;
  return { c, toggled, hide: button('hide'), pin: button('pin') };
}

describe('MarksControl', () => {
  it('draws two named toggle buttons, off', () => {
    const { c, hide, pin } = control();
    expect(c.node.dataset.lmSuppressShortcuts).toBe('true');
    expect([hide.getAttribute('aria-label'), pin.getAttribute('aria-label')]).toEqual([HIDE_LABEL, PIN_LABEL]);
    expect([hide.getAttribute('aria-pressed'), pin.getAttribute('aria-pressed')]).toEqual(['false', 'false']);
    expect([hide.type, hide.title]).toEqual(['button', 'Hide from the model']);
    expect([...hide.children].map(e => [(e as HTMLElement).dataset.icon, (e as HTMLElement).hidden])).toEqual([
      ['eye', false],
      ['eye-off', true]
    ]);
    expect([...hide.children].every(e => e.getAttribute('aria-hidden') === 'true')).toBe(true);
  });

  it('shows the tags: pressed, the struck-through eye, and a tooltip saying what on means', () => {
    const { c, hide, pin } = control();
    c.update([HIDE_TAG, 'other']);
    expect([hide.getAttribute('aria-pressed'), pin.getAttribute('aria-pressed')]).toEqual(['true', 'false']);
    expect([...hide.children].map(e => (e as HTMLElement).hidden)).toEqual([true, false]);
    expect(hide.title).toMatch(/^Hidden from the model/);
    expect(hide.getAttribute('aria-label')).toBe(HIDE_LABEL); // the name stays; the state is aria-pressed
    c.update([PIN_TAG]);
    expect([hide.getAttribute('aria-pressed'), pin.getAttribute('aria-pressed')]).toEqual(['false', 'true']);
    expect(pin.title).toMatch(/^Pinned/);
  });

  it('asks for its tag on a click, and keeps the focus and the selection on a mouse press', () => {
    const { toggled, hide, pin } = control();
    hide.click();
    pin.click();
    expect(toggled).toEqual([HIDE_TAG, PIN_TAG]);
    const outside = vi.fn();
    document.body.addEventListener('mousedown', outside);
    const down = new MouseEvent('mousedown', { bubbles: true, cancelable: true });
    hide.dispatchEvent(down);
    expect(down.defaultPrevented).toBe(true);
    expect(outside).not.toHaveBeenCalled();
  });
});

describe('flipTag and oneUndoStep', () => {
  it('flips a tag inside one transaction of the notebook, captured alone', () => {
    const meta: { [k: string]: unknown } = { tags: ['a'] };
    const cell: IMetadataHolder = {
      getMetadata: k => meta[k],
      setMetadata: (k, v) => (meta[k] = v),
      deleteMetadata: k => delete meta[k]
    };
    const log: string[] = [];
    const nb = {
      transact: (f: () => void) => {
        log.push('begin');
        f();
        log.push('end');
      },
      undoManager: { stopCapturing: () => log.push('stop') }
    };
    oneUndoStep(nb, () => {
      flipTag(cell, HIDE_TAG);
      log.push(JSON.stringify(meta.tags));
    });
    expect(log).toEqual(['stop', 'begin', '["a","boop-hide"]', 'end', 'stop']);
    oneUndoStep(null, () => flipTag(cell, HIDE_TAG));
    expect(meta.tags).toEqual(['a']);
  });
});
