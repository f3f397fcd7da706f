#!/usr/bin/env bash
# Builds and runs the C++ unit tests of the torch-free layers (csrc/runtime, ir, lowering, exec)
# as one binary, build/cpp_tests/unit_tests, against the PJRT plugin of the xla-cpu-pjrt wheel.
#
#   scripts/cpp_tests.sh            # build (incrementally) and run every test
#   scripts/cpp_tests.sh StorageView   # run the tests whose "Suite.Name" contains the argument
#
# Objects are cached under build/cpp_tests/obj with their header dependencies (-MMD), so a rerun
# recompiles only what changed; one compile at a time. Environment: CXX (default ccache g++ when
# present), EXTRA_CXXFLAGS, TORCH_TPU_TEST_PLUGIN (default: the wheel's xla_cpu_pjrt.so), PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python}

die() { echo "cpp_tests.sh: error: $*" >&2; exit 1; }

if [[ -z "${CXX:-}" ]]; then
  if [[ -x /usr/lib/ccache/g++ ]]; then CXX=/usr/lib/ccache/g++; else CXX=g++; fi
fi
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}

PJRT_DIR=$("$PYTHON" -c "import importlib.util as u; s = u.find_spec('xla_plugins.xla_cpu_pjrt'); print(s.submodule_search_locations[0] if s else '')") ||
  die "cannot run $PYTHON to locate the xla-cpu-pjrt wheel"
[[ -n "$PJRT_DIR" && -f "$PJRT_DIR/include/pjrt_c_api.h" ]] ||
  die "pjrt_c_api.h not found: pip install xla-cpu-pjrt"
export TORCH_TPU_TEST_PLUGIN=${TORCH_TPU_TEST_PLUGIN:-$PJRT_DIR/xla_cpu_pjrt.so}

# EXTRA_CXXFLAGS (e.g. "-fsanitize=address -g") is added to compile and link commands.
read -r -a EXTRA <<< "${EXTRA_CXXFLAGS:-}"
CXXFLAGS=(-std=c++20 -O1 -pthread -Wall -Wno-sign-compare -Wno-unused-variable -I csrc -I "$PJRT_DIR/include" "${EXTRA[@]}")
OUT=build/cpp_tests
BIN=$OUT/unit_tests
mkdir -p "$OUT/obj"

# Every non-torch source of the four layers plus the test files; never csrc/aten, csrc/python.
mapfile -t SOURCES < <(find csrc/runtime csrc/ir csrc/lowering csrc/exec csrc/testing -name '*.cpp' 2>/dev/null | sort)
[[ ${#SOURCES[@]} -gt 0 ]] || die "no sources found"

# A flags change (compiler, include dir) invalidates every object.
STAMP="$OUT/flags"
FLAGS_NOW="$CXX ${CXXFLAGS[*]}"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$FLAGS_NOW" ]]; then
  rm -f "$OUT"/obj/*.o "$OUT"/obj/*.d
  printf '%s' "$FLAGS_NOW" > "$STAMP"
fi

# True when $1 (object) is missing or older than its source or any header listed in its .d file.
stale() {
  local obj=$1 src=$2 dep=${1%.o}.d
  [[ -f "$obj" && -f "$dep" ]] || return 0
  [[ "$src" -nt "$obj" ]] && return 0
  local f
  # .d format: "obj: src hdr1 hdr2 \" lines, then "hdr:" phony targets (-MP).
  for f in $(sed -e 's/\\$//' -e 's/^[^ ]*://' "$dep"); do
    [[ -e "$f" ]] || return 0
    [[ "$f" -nt "$obj" ]] && return 0
  done
  return 1
}

OBJECTS=()
for src in "${SOURCES[@]}"; do
  obj="$OUT/obj/$(echo "${src#csrc/}" | tr '/' '_' | sed 's/\.cpp$/.o/')"
  OBJECTS+=("$obj")
  if stale "$obj" "$src"; then
    echo "  CXX $src"
    if ! "$CXX" "${CXXFLAGS[@]}" -MMD -MP -c "$src" -o "$obj"; then
      rm -f "$obj"
      die "compiling $src failed"
    fi
  fi
done
# Drop objects of deleted sources so they never link in.
for o in "$OUT"/obj/*.o; do
  keep=0
  for k in "${OBJECTS[@]}"; do [[ "$o" == "$k" ]] && keep=1 && break; done
  [[ $keep == 1 ]] || rm -f "$o" "${o%.o}.d"
done

relink=0
[[ -x "$BIN" ]] || relink=1
for o in "${OBJECTS[@]}"; do [[ "$o" -nt "$BIN" ]] && relink=1 && break; done
[[ "$STAMP" -nt "$BIN" ]] && relink=1
if [[ $relink == 1 ]]; then
  echo "  LINK $BIN"
  "$CXX" -pthread "${EXTRA[@]}" -o "$BIN.tmp" "${OBJECTS[@]}" -ldl || die "linking $BIN failed"
  mv "$BIN.tmp" "$BIN"
fi

echo "running $BIN (plugin $TORCH_TPU_TEST_PLUGIN)"
exec "$BIN" "$@"
