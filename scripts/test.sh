#!/usr/bin/env bash
# Installs torch_tpu, then runs the default test suite (C++ unit tests of the torch-free
# layers included, through tests/test_cpp_units.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
python -m pytest tests -q -p no:cacheprovider --durations=15 "$@"
