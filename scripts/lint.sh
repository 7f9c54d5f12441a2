#!/usr/bin/env bash
# Lint and type checks (configuration in pyproject.toml), in the order `make lint` runs them:
# ruff (lint, then format check), mypy on the six packages (tests are not type-checked),
# import-linter's app-boundary contracts. Stops at the first that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> ruff check"
.venv/bin/ruff check .
echo "==> ruff format --check"
.venv/bin/ruff format --check .
echo "==> mypy"
.venv/bin/mypy projects generation annotate labeling workspace config
echo "==> lint-imports"
.venv/bin/lint-imports
