import { defineConfig } from 'vitest/config';

// Unit tests of the pure modules (node) and of the reply DOM (jsdom, per file: `// @vitest-environment jsdom`).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node'
  }
});
