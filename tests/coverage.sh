#!/usr/bin/env bash
# The whole suite under coverage, kernels and other child processes included, then the figures per module:
#   tests/coverage.sh                 # everything (what CI runs)
#   tests/coverage.sh -m 'not slow'   # any pytest arguments pass through
# Settings: [tool.coverage.*] in pyproject.toml. Each process writes its own .coverage.* file; they are combined here.
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
export COVERAGE_FILE="$PWD/.coverage"   # absolute: children run in the tests' own folders
rm -f .coverage .coverage.*
"$py" -m coverage run -m pytest "$@"
status=$?
"$py" -m coverage combine -q
"$py" -m coverage report
"$py" -m coverage html -q -d "${BOOPITER_ARTIFACTS:-htmlcov}/coverage" && echo "HTML report: ${BOOPITER_ARTIFACTS:-htmlcov}/coverage/index.html"
exit $status
