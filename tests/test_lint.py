"""The lint, part of every run (CI's included): ruff on the Python (`[tool.ruff]` in pyproject.toml: the project's one-line
style allowed), eslint on the frontend's sources and tests (js/eslint.config.mjs, typescript-eslint), and tsc on the
TypeScript tests too (js/tsconfig.test.json; the build checks only js/src). Alone: `ruff check .`, `cd js && npm run lint`.
"""

import os, shutil, subprocess, sys
from conftest import ROOT
from test_frontend_units import JS, needs


def run(args, cwd):
    r = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, env={**os.environ, 'NO_COLOR': '1'})
    return r.returncode, (r.stdout + r.stderr)[-8000:]


def node_tool(name):
    "js/node_modules/.bin/NAME, there after `pip install -e .` (the build runs `npm install`, devDependencies included)."
    tool = JS/'node_modules'/'.bin'/name
    if not shutil.which('node'): needs('node', 'install node and npm (they also build the extension)')
    if not tool.exists(): needs(f'js/node_modules/.bin/{name}', "`pip install -e .` (or `npm install` in js/)")
    return str(tool)


def test_python_passes_ruff():
    code, out = run([sys.executable, '-m', 'ruff', 'check', '--no-cache', '--output-format', 'concise', '.'], ROOT)
    assert code == 0, out


def test_typescript_sources_and_tests_pass_eslint():
    code, out = run([node_tool('eslint'), '--max-warnings', '0', 'src', 'test'], JS)
    assert code == 0, out


def test_typescript_tests_type_check():
    code, out = run([node_tool('tsc'), '--noEmit', '-p', 'tsconfig.test.json'], JS)
    assert code == 0, out
