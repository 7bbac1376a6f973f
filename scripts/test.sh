#!/usr/bin/env bash
# Install everything the tests need (Python packages and Debian packages), then run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x scripts/install-system-deps.sh ] || [ -f scripts/install-system-deps.sh ]; then
  bash scripts/install-system-deps.sh
fi
python3 -m pip install -q -e '.[test]'
# -n auto: one worker per core (the LibreOffice and browser tests each use their own profile); --dist loadfile:
# a module's tests on one worker, so that its fixtures (a built report, a workbook LibreOffice recalculated,
# tests/workbooks.py's parses) are made once, not once per worker (11.7 min for the suite here, 13.9 without)
python3 -m pytest -q -n auto --dist loadfile "$@"
