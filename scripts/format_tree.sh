#!/usr/bin/env bash
# Apply the code style of pyproject.toml ([tool.ruff]) to every Python file tests/lessons/test_style.py checks,
# then list what needs a human (the fixes ruff will not make by itself) and the lessons to rebuild.
#
#   scripts/format_tree.sh            # format, fix, report
#   scripts/format_tree.sh --check    # only report (what the test runs)
#
# Formatting a lesson's source changes its notebook's code cells: rebuild those lessons afterwards with
#   python scripts/build_notebooks.py NN ...   (printed below), then run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(utils lessons_src scripts benchmarks tests conftest.py)
if [ "${1:-}" = "--check" ]; then
  ruff format --check "${targets[@]}" && ruff check "${targets[@]}"
  exit
fi
before=$(git diff --name-only -- lessons_src)
ruff check --fix --quiet "${targets[@]}" || true   # safe fixes: import order, unused imports, pyupgrade
ruff format "${targets[@]}"
ruff check --fix --quiet "${targets[@]}" || true   # again: formatting can change what the first pass saw
git diff --shortstat
changed=$(comm -13 <(echo "$before" | sort) <(git diff --name-only -- lessons_src | sort) | sed -n 's#lessons_src/\([0-9][0-9]\)_.*#\1#p' | tr '\n' ' ')
if [ -n "$changed" ]; then
  echo "lesson sources reformatted; rebuild them: MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=default python scripts/build_notebooks.py $changed"
fi
echo "left for a human (ruff cannot fix these safely):"
ruff check "${targets[@]}" --output-format concise || exit 1
