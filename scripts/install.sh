#!/usr/bin/env bash
# Installs torch_tpu and everything it needs into the current Python environment.
# torch is pinned to the CPU build 2.13.0; the extension builds against it without build
# isolation (an isolated build would download a second, CUDA, torch).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check \
  torch==2.13.0 xla-cpu-pjrt==0.0.1 numpy pytest expecttest ninja setuptools wheel
if ! command -v ccache >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  # Optional: makes rebuilds near-instant. Failure to install it is not an error.
  (apt-get install -y -qq ccache >/dev/null 2>&1 || true)
fi
MAX_JOBS="${MAX_JOBS:-$(nproc)}" python setup.py build_ext --inplace >/tmp/torch_tpu_build.log 2>&1 || {
  tail -50 /tmp/torch_tpu_build.log
  echo "torch_tpu: build failed (full log: /tmp/torch_tpu_build.log)" >&2
  exit 1
}
python -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e .
