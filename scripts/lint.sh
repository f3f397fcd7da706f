#!/usr/bin/env bash
# Lint and formatting check (seconds): ruff for Python, clang-format for C++, at the versions
# scripts/install.sh pins. Fails on the first kind of error; `scripts/lint.sh --fix` rewrites
# the files instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t CXX_FILES < <(git ls-files '*.cpp' '*.h')
if [[ "${1:-}" == "--fix" ]]; then
  ruff format --quiet .
  clang-format -i "${CXX_FILES[@]}"
  ruff check --fix --quiet .  # last: what it cannot fix is the script's failure
else
  ruff check --quiet . || { echo "lint: ruff check failed (scripts/lint.sh --fix fixes some)" >&2; exit 1; }
  ruff format --check --quiet . || { echo "lint: Python files need formatting: scripts/lint.sh --fix" >&2; exit 1; }
  clang-format --dry-run -Werror "${CXX_FILES[@]}" ||
    { echo "lint: C++ files need formatting: scripts/lint.sh --fix" >&2; exit 1; }
fi
