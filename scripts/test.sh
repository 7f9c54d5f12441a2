#!/usr/bin/env bash
# Sets up (with test tools and chromium), runs the lint and type checks (scripts/lint.sh, as
# `make lint`) and then the whole test suite (docs/testing.md):
#   1. on SQLite, everything but the PostgreSQL-only tests, in two parts:
#      a. unit, service, command, view and API tests, in parallel (pytest-xdist,
#         COUNTERPART_TEST_WORKERS processes, default 2; 0 = in this process);
#      b. the real-model / real-data (slow), broker and browser tests, one at a time (they
#         start workers, servers and chromium of their own);
#   2. against the real PostgreSQL, when it is reachable: only what can differ by database —
#      the tests marked `postgres` (PostgreSQL only) or `postgres_too` (raw SQL, row locks,
#      SKIP LOCKED claims, jsonb, the vendor switch, NUL-refusing text; which modules must carry
#      the mark is checked by tests/config/test_postgres_marks.py), in parallel too.
# Redis-backed broker tests and browser tests run in step 1b and skip, saying why, when the
# service is missing — unless COUNTERPART_REQUIRE_SERVICES=1 (set by .ci/run), where a
# missing service is a failure. Extra arguments go to every pytest run (a run that selects
# nothing with them is not a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
bash scripts/lint.sh
export NLTK_DATA=${NLTK_DATA:-$PWD/var/nltk_data}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset DATABASE_URL
WORKERS=${COUNTERPART_TEST_WORKERS:-2}
PARALLEL=(-n "$WORKERS")

run_pytest() {  # pytest's exit code 5 ("no tests collected", e.g. a -k that matches nothing here) is fine
  local rc=0
  .venv/bin/pytest "$@" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then exit "$rc"; fi
}

echo "==> pytest (SQLite, $WORKERS workers): unit, service, view and API tests"
run_pytest -m "not postgres and not (slow or browser or broker)" "${PARALLEL[@]}" "$@"
echo "==> pytest (SQLite, one at a time): real models and data, brokers, browsers"
run_pytest -m "not postgres and (slow or browser or broker)" "$@"

PG_URL=${COUNTERPART_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/counterpart}
if .venv/bin/python -c "import psycopg,sys; psycopg.connect('${PG_URL}'.rsplit('/',1)[0]+'/postgres', connect_timeout=3).close()" 2>/dev/null; then
  echo "==> pytest (PostgreSQL: $PG_URL, $WORKERS workers): what can differ by database"
  DATABASE_URL=$PG_URL run_pytest -m "postgres or (postgres_too and not (slow or browser or broker))" "${PARALLEL[@]}" "$@"
elif [ "${COUNTERPART_REQUIRE_SERVICES:-0}" = 1 ]; then
  echo "!! PostgreSQL not reachable at $PG_URL and COUNTERPART_REQUIRE_SERVICES=1" >&2
  exit 1
else
  echo "==> SKIPPED: PostgreSQL integration tests (no server at $PG_URL)"
fi
