"""The JupyterLab / Notebook 7 extension in js/: its TypeScript unit tests pass, and the built extension is installed.

`pip install -e .` builds js/ with npm (hatch-jupyter-builder) and leaves js/node_modules, so vitest is there:
block splitting of streamed Markdown, the protocol checks, the menu's state reducer, labels and badges, prompt-cell
detection, following the stream, and the reply's DOM (jsdom). Run them alone with `cd js && npm test`.
"""

import importlib.util, json, os, shutil, subprocess, sys
import pytest
from conftest import ROOT

JS = ROOT/'js'


def needs(what, why):
    "Skip on a developer machine that lacks `what`; under CI it is a failure."
    if os.environ.get('CI'): pytest.fail(f'{what} is missing: {why}')
    pytest.skip(f'{what} is missing: {why}')


def test_typescript_units_pass(tmp_path):
    npm = shutil.which('npm')
    if not npm: needs('npm', 'install node and npm (they also build the extension)')
    if not (JS/'node_modules'/'.bin'/'vitest').exists(): needs('js/node_modules', "`pip install -e .` (or `npm install` in js/)")
    report = tmp_path/'vitest.json'
    r = subprocess.run([npm, 'test', '--', '--reporter=json', f'--outputFile={report}'], cwd=JS, capture_output=True,
                       text=True, timeout=600, env={**os.environ, 'NO_COLOR': '1'})
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    result = json.loads(report.read_text())
    # skipped: only the wire test, which needs the kernel's messages (tests/test_protocol_schema.py runs it with them)
    failed = [t['fullName'] for f in result['testResults'] for t in f['assertionResults']
              if t['status'] != 'passed' and not (t['status'] in ('skipped', 'pending') and 'wire.test' in f['name'])]
    assert result['numFailedTests'] == 0 and not failed, failed
    assert result['numPassedTests'] >= 50, result['numPassedTests']   # the suites are all there


def test_labextension_is_built_and_enabled():
    built = ROOT/'boopiter_ext'/'labextension'/'package.json'
    if not built.exists(): needs(str(built), "`pip install -e .` builds it (node and npm on PATH)")
    assert json.loads(built.read_text())['jupyterlab']['_build']['load'].startswith('static/remoteEntry.')
    if not importlib.util.find_spec('jupyterlab'): needs('jupyterlab', "pip install -e '.[browser]'")
    r = subprocess.run([sys.executable, '-m', 'jupyterlab.labextensions', 'list'], capture_output=True, text=True,
                       timeout=120, env={**os.environ, 'NO_COLOR': '1'})
    line = next((l for l in r.stderr.splitlines() if 'boopiter-ext' in l), '')
    assert 'enabled' in line and 'OK' in line, r.stderr[-3000:]
