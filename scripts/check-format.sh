#!/usr/bin/env bash
# Fails when a C or C++ source in the repository differs from what clang-format (with the
# repository's .clang-format) would write. Fix with: clang-format -i <file>.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
git ls-files '*.c' '*.cpp' '*.h' | xargs clang-format --dry-run --Werror
echo "check-format: all sources formatted"
