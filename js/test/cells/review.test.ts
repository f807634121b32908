// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { changesBar, review, stepConsent } from '../../src/cells/review';

describe('review', () => {
  it('shows the diff as text, never markup, and resolves with the click', async () => {
    const r = review({ title: 'The model proposes this change', before: 'x = 1\nprint(x)', after: 'x = <img src=x onerror=alert(1)>\nprint(x)' });
    document.body.append(r.node);
    expect(r.node.querySelector('img')).toBeNull();
    const rows = Array.from(r.node.querySelectorAll('.boop-Review-line'), n => [n.className.split(' ')[1], n.textContent]);
    expect(rows).toEqual([
      ['boop-mod-del', '- x = 1'],
      ['boop-mod-add', '+ x = <img src=x onerror=alert(1)>'],
      ['boop-mod-same', '  print(x)']
    ]);
    expect(r.node.getAttribute('aria-label')).toBe('The model proposes this change');
    (r.node.querySelector('.boop-Review-accept') as HTMLButtonElement).click();
    expect(await r.decided).toBe(true);
    expect(r.node.isConnected).toBe(false);
  });

  it('resolves false on Reject and on withdraw, once', async () => {
    const rejected = review({ title: 't', before: 'a', after: '', accept: 'Delete the cell' });
    expect(rejected.node.querySelector('.boop-Review-accept')!.textContent).toBe('Delete the cell');
    (rejected.node.querySelector('.boop-Review-reject') as HTMLButtonElement).click();
    expect(await rejected.decided).toBe(false);
    const withdrawn = review({ title: 't', before: 'a', after: 'b' });
    withdrawn.withdraw();
    (withdrawn.node.querySelector('.boop-Review-accept') as HTMLButtonElement).click(); // too late: no effect
    expect(await withdrawn.decided).toBe(false);
  });

  it("the changes bar says how many, and its Undo says what it did and goes", () => {
    let calls = 0;
    const bar = changesBar(2, () => {
      calls++;
      return 'Undone: 2 changes.';
    });
    expect(bar.textContent).toContain('changed the notebook 2 times');
    (bar.querySelector('.boop-Changes-undo') as HTMLButtonElement).click();
    expect(calls).toBe(1);
    expect(bar.textContent).toBe('Undone: 2 changes.');
    expect(bar.querySelector('button')).toBeNull();
  });
});

describe('stepConsent', () => {
  it('offers Run, Skip, Stop and the rest of the reply, and resolves with the click', async () => {
    const ask = stepConsent('x = <b>1</b>', '');
    expect(Array.from(ask.node.querySelectorAll('button'), b => b.textContent)).toEqual(['Run', 'Skip', 'Stop', 'Run the rest of this reply']);
    expect(ask.node.querySelector('pre')!.textContent).toBe('x = <b>1</b>'); // the code, as text
    expect(ask.node.querySelector('b')).toBeNull();
    (ask.node.querySelector('[data-boop-step=rest]') as HTMLButtonElement).click();
    expect(await ask.decided).toBe('rest');
  });

  it('never offers the rest for code that reaches outside the kernel, and says why; withdrawn is a stop', async () => {
    const ask = stepConsent('import subprocess', 'it imports subprocess');
    expect(ask.node.querySelector('[data-boop-step=rest]')).toBeNull();
    expect(ask.node.textContent).toContain('asked every time: it imports subprocess');
    ask.withdraw();
    expect(await ask.decided).toBe('stop');
  });
});
