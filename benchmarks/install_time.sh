#!/usr/bin/env bash
# Times the README's install command as issue 16 checks it: a fresh clone of this repository in
# a fresh virtual environment (cold: ccache off), the same command again with no change, then
# again after touching one lowering file, then a (non-editable) wheel install imported from /.
# Prints seconds and how many build steps (compiles and links) each run took, from the build log.
#
#   bash benchmarks/install_time.sh [WORKDIR]      (default WORKDIR: a new temp directory)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d)}
python -m venv "$WORK/venv"
git clone -q "$REPO" "$WORK/clone"
# shellcheck disable=SC1091
source "$WORK/venv/bin/activate"
cd "$WORK/clone"

steps() { grep -cE '^\s*\[[0-9]+/[0-9]+\] ' build/install.log || true; }
timed() {  # timed LABEL COMMAND...: runs the command, prints its seconds and build steps
  local label=$1 start
  shift
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1
  printf '%-44s %7.1f s  %3d build steps\n' "$label" "$((($(date +%s%N) - start) / 1000000))e-3" "$(steps)"
}

timed "first install (fresh venv, ccache off)" env CCACHE_DISABLE=1 bash scripts/install.sh
timed "second install, no change" bash scripts/install.sh
touch csrc/lowering/nn/glu.cpp
timed "install after touching one lowering file" env CCACHE_DISABLE=1 bash scripts/install.sh
echo "  compiled: $(grep -oE ' -c [^ ]+\.cpp' build/install.log | sed 's|.*/||' | tr '\n' ' ')"
echo "  linked:   $(grep -E '^\s*\[[0-9]+/[0-9]+\] : &&' build/install.log | grep -oE ' -o [^ ]+' | sed 's/ -o //' | tr '\n' ' ')"
timed "wheel: pip install --no-build-isolation ." bash -c \
  "python -m pip install -v --no-build-isolation --no-deps --root-user-action=ignore . >build/install.log 2>&1"
cd / && python -c "import torch, torch_tpu; print('wheel, imported from /:', torch_tpu.__file__, (torch.ones(3, device='tpu') + 1).cpu())"
