#!/usr/bin/env bash
# Installs torch_tpu (a no-op rebuild when nothing changed), checks lint and formatting
# (scripts/lint.sh, seconds), then runs the default test suite; tests/test_build.py runs the C++
# unit tests of the torch-free core under ctest; tests/test_vllm.py builds vLLM's environment
# (scripts/vllm_env.sh) on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
bash scripts/lint.sh
# Two worker processes, each taking whole test files (fixtures and the order within a file as in
# a serial run): the full suite took 56 minutes serially on 2 cores, 39 with two workers.
python -m pytest tests -q -p no:cacheprovider -n 2 --dist loadfile --durations=15 "$@"
