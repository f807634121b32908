// The frontend's lint, its sources and its tests (`npm run lint`; CI runs it through tests/test_lint.py).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['lib/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.ts', 'test/**/*.ts'],
    rules: {
      // JupyterLab's internals (a cell's model, a kernel's future) are typed loosely where the extension reaches them
      '@typescript-eslint/no-explicit-any': 'off',
      // the sanitizers and the edit checks match control characters on purpose
      'no-control-regex': 'off',
      // a parameter or a name kept for its place is spelt `_x`
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }]
    }
  }
);
