#!/usr/bin/env bash
# Sets up (with test tools and chromium), runs the lint and type checks (scripts/lint.sh, as
# `make lint`) and then the whole test suite:
#   1. everything on SQLite (PostgreSQL-only tests are deselected here);
#   2. against the real PostgreSQL, when it is reachable: the PostgreSQL-only integration
#      tests plus every database test that needs no browser, broker or real model (so the
#      PostgreSQL code paths — SKIP LOCKED claims, jsonb, constraints — run too).
# Redis-backed broker tests and browser tests run in step 1 and skip, saying why, when the
# service is missing — unless COUNTERPART_REQUIRE_SERVICES=1 (set by .ci/run), where a
# missing service is a failure. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
bash scripts/lint.sh
export NLTK_DATA=${NLTK_DATA:-$PWD/var/nltk_data}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset DATABASE_URL
echo "==> pytest (SQLite)"
.venv/bin/pytest -m "not postgres" "$@"

PG_URL=${COUNTERPART_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/counterpart}
if .venv/bin/python -c "import psycopg,sys; psycopg.connect('${PG_URL}'.rsplit('/',1)[0]+'/postgres', connect_timeout=3).close()" 2>/dev/null; then
  echo "==> pytest (PostgreSQL: $PG_URL)"
  DATABASE_URL=$PG_URL .venv/bin/pytest -m "postgres or not (slow or browser or broker)" "$@"
elif [ "${COUNTERPART_REQUIRE_SERVICES:-0}" = 1 ]; then
  echo "!! PostgreSQL not reachable at $PG_URL and COUNTERPART_REQUIRE_SERVICES=1" >&2
  exit 1
else
  echo "==> SKIPPED: PostgreSQL integration tests (no server at $PG_URL)"
fi
