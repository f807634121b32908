#!/usr/bin/env bash
# The whole suite under coverage (the lint included: tests/test_lint.py), kernels and other child processes too, in two
# pytest-xdist workers, then the figures per module:
#   tests/coverage.sh                 # everything (what CI runs)
#   tests/coverage.sh -m 'not slow'   # any pytest arguments pass through (`-n 0`: one process)
# Settings: [tool.coverage.*] in pyproject.toml. Each process writes its own .coverage.* file; they are combined here.
# The workers: `--dist loadgroup` keeps the browser tests on one worker (one JupyterLab and one Notebook 7 server for
# them all) and the embedded model's tests on one (their engines do not share the cores with each other).
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
export COVERAGE_FILE="$PWD/.coverage"   # absolute: children run in the tests' own folders
rm -f .coverage .coverage.*
"$py" -m coverage run -m pytest -n 2 --dist loadgroup --durations=30 "$@"
status=$?
"$py" -m coverage combine -q
"$py" -m coverage report
"$py" -m coverage html -q -d "${BOOPITER_ARTIFACTS:-htmlcov}/coverage" && echo "HTML report: ${BOOPITER_ARTIFACTS:-htmlcov}/coverage/index.html"
exit $status
