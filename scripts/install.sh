#!/usr/bin/env bash
# Installs torch_tpu (editable) and everything it and its tests need into the current Python
# environment (the Hugging Face packages: tests/test_huggingface.py and tools/hf_suite.py; JAX:
# tests/test_imported_module.py).
# torch is pinned to the CPU build 2.13.0; the extension builds against it without build
# isolation (an isolated build would download a second, CUDA, torch).
#
# One CMake build tree, build/<python cache tag> (CMakeLists.txt, pyproject.toml), kept between
# runs: a rerun with no change compiles nothing, a changed file recompiles only that file.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  torch==2.13.0 xla-cpu-pjrt==0.0.1 numpy scipy pytest expecttest \
  scikit-build-core==1.1.2 cmake ninja ruff==0.17.6 clang-format==21.1.8 \
  transformers==5.25.0 accelerate==1.16.0 diffusers==0.42.1 parameterized pytest-timeout pytest-xdist==3.8.0 jax==0.10.2 \
  tqdm matplotlib==3.11.2
if ! command -v ccache >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  # Optional: makes a build in a fresh clone near-instant. Failure to install it is not an error.
  (apt-get install -y -qq ccache >/dev/null 2>&1 || true)
fi
LOG=build/install.log
mkdir -p build
python -m pip install -v --disable-pip-version-check --root-user-action=ignore --no-build-isolation --no-deps \
  -Cbuild.verbose=true -e . >"$LOG" 2>&1 || {
  tail -60 "$LOG"
  echo "torch_tpu: build failed (full log: $LOG)" >&2
  exit 1
}
