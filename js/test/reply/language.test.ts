import { describe, expect, it } from 'vitest';
import { cellSource } from '../../src/reply/language';

/** A seeded generator of code: any character a block may hold, newlines, `%%` lines and fences included. */
function* codes(n: number, seed = 7): Generator<string> {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pieces = ['ls -la', '\n', '%%bash', 'echo "$HOME"', 'print(1)', '```', ' ', '\t', 'é', '$((1+2))', '#!/bin/sh', ''];
  for (let i = 0; i < n; i++) {
    yield Array.from({ length: Math.floor(next() * 8) }, () => pieces[Math.floor(next() * pieces.length)]).join('');
  }
}

describe('cellSource', () => {
  it('puts a shell block under %%bash, whatever its case', () => {
    for (const lang of ['bash', 'sh', 'shell', 'BASH', 'Sh']) {
      expect(cellSource(lang, 'ls')).toBe('%%bash\nls');
    }
  });

  it('keeps a Python block (tagged or not) as it is', () => {
    for (const lang of ['', 'python', 'python3', 'py', 'ipython', 'ipython3', 'Python']) {
      expect(cellSource(lang, 'print(1)')).toBe('print(1)');
    }
  });

  it('makes no cell of a language the kernel cannot run', () => {
    for (const lang of ['json', 'text', 'zsh', 'console', 'javascript', 'js', 'r', 'sql', 'yaml', 'pycon', 'powershell']) {
      expect(cellSource(lang, 'ls')).toBeNull();
    }
  });

  it('keeps the code whole after the magic line, for any code (generated)', () => {
    let seen = 0;
    for (const code of codes(300)) {
      const cell = cellSource('bash', code)!;
      expect(cell.split('\n')[0]).toBe('%%bash'); // the magic is the cell's first line, so the cell runs in bash
      expect(cell.slice('%%bash\n'.length)).toBe(code);
      expect(cellSource('python', code)).toBe(code);
      expect(cellSource('json', code)).toBeNull();
      seen += code.includes('\n') ? 1 : 0;
    }
    expect(seen).toBeGreaterThan(50); // many-line code among them
  });
});
