// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { drawFault, faultOf } from '../../src/cells/fault';
import { inlinePieces } from '../../src/menu/inline';

const UNREACHABLE = 'Ollama is not reachable at http://127.0.0.1:18811 (host from OLLAMA_HOST). Start it with `ollama serve` ' +
  '(or open the Ollama app), or point boopiter elsewhere: OLLAMA_HOST, `host = ...` in settings.ini, or `%%prompt -m` another model.';
const err = (ename: string, evalue: string, traceback = [`${ename}: ${evalue}`]) => ({ ename, evalue, traceback });

describe("boopiter's faults", () => {
  it('are known by name and by their one line', () => {
    expect(faultOf(err('OllamaUnreachable', UNREACHABLE))).toEqual({ name: 'OllamaUnreachable', message: UNREACHABLE });
    expect(faultOf(err('ValueError', 'x'))).toBeNull();                       // not boopiter's: JupyterLab draws it
    expect(faultOf(err('ReplyStalled', 'x', ['Traceback (most recent call last):', 'ReplyStalled: x']))).toBeNull();
    expect(faultOf(err('ReplyStalled', 'x', ['ReplyStalled: y']))).toBeNull();
    for (const bad of [null, 'OllamaUnreachable: x', {}, { ename: 'NoModel', evalue: 3, traceback: [] }, err('NoModel', ' ')]) {
      expect(faultOf(bad)).toBeNull();
    }
  });

  it('read as a paragraph: code spans as code, the address a link, nothing else', () => {
    const host = document.createElement('div');
    const box = drawFault(host, { name: 'OllamaUnreachable', message: UNREACHABLE });
    expect(Array.from(box.querySelectorAll('code'), c => c.textContent)).toEqual(['ollama serve', 'host = ...', '%%prompt -m']);
    const [a] = Array.from(box.querySelectorAll('a'));
    expect([a.getAttribute('href'), a.rel, box.querySelectorAll('a').length]).toEqual(['http://127.0.0.1:18811', 'noopener noreferrer', 1]);
    expect(box.textContent).toBe(`OllamaUnreachable: ${UNREACHABLE.replace(/`/g, '')}`);
    expect(box.textContent).not.toContain('`');
  });
});

/** A seeded generator of hostile fault messages: markup, backticks, addresses in every disguise. */
function* messages(n: number, seed = 7): Generator<string> {
  let x = seed;
  const rnd = (k: number) => ((x = (x * 1103515245 + 12345) % 2 ** 31) % k);
  const atoms = ['<img src=x onerror=alert(1)>', '<script>alert(1)</script>', '`', '``', '`code`', 'javascript:alert(1)',
    'http://ok.example/a?b=<c>', 'https://x.example/`y`', 'data:text/html,<b>x</b>', '&lt;b&gt;', ' ', '\n', 'word',
    'http://', 'https://h.example.', '(http://p.example/q)', '"onmouseover=alert(1)"', '\u202e', '`<a href=x>`'];
  for (let i = 0; i < n; i++) {
    yield Array.from({ length: 1 + rnd(12) }, () => atoms[rnd(atoms.length)]).join(rnd(2) ? '' : ' ');
  }
}

describe('a fault or menu line from generated hostile text', () => {
  it('becomes text, code and http(s) links only, and loses nothing but backticks', () => {
    let links = 0;
    let codes = 0;
    for (const message of messages(600)) {
      const box = drawFault(document.createElement('div'), { name: 'OllamaError', message });
      const elements = Array.from(box.querySelectorAll('*'), e => e.tagName);
      expect(elements.every(t => ['SPAN', 'CODE', 'A'].includes(t)), message).toBe(true);
      for (const a of Array.from(box.querySelectorAll('a'))) {
        expect(/^https?:\/\//.test(a.getAttribute('href')!), message).toBe(true);
        expect(a.attributes.length).toBe(3);                                  // href, target, rel: nothing else
        links++;
      }
      codes += box.querySelectorAll('code').length;
      const pieces = inlinePieces(message).map(p => p.text).join('');
      expect(box.querySelector('.boop-Fault-text')!.textContent).toBe(pieces);
      expect(pieces.length).toBeGreaterThanOrEqual(message.length - (message.match(/`/g) ?? []).length);
    }
    expect(links).toBeGreaterThan(50);                                        // the examples reach both kinds
    expect(codes).toBeGreaterThan(50);
  }, 60_000);
});

describe('an error that is not boopiter\'s', () => {
  it('gets an "Ask why" button that asks about the node it is drawn in', async () => {
    const { ASK_WHY, askButton } = await import('../../src/cells/fault');
    const host = document.createElement('div');
    const asked: HTMLElement[] = [];
    const button = askButton(host, node => asked.push(node));
    expect([button.textContent, button.type, button.className]).toEqual([ASK_WHY, 'button', 'boop-AskWhy']);
    button.click();
    button.click();
    expect(asked).toEqual([host, host]);
  });
});
