#!/usr/bin/env bash
# Installs torch_tpu (a no-op rebuild when nothing changed), checks lint and formatting
# (scripts/lint.sh, seconds), then runs the default test suite; tests/test_build.py runs the C++
# unit tests of the torch-free core under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
bash scripts/lint.sh
python -m pytest tests -q -p no:cacheprovider --durations=15 "$@"
