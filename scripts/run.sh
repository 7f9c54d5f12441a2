#!/usr/bin/env bash
# Sets up, creates the demo project and runs Counterpart on embedded defaults:
# SQLite, Celery workers over kombu's SQLAlchemy transport (a SQLite file, no server),
# and the web app at http://127.0.0.1:8000. Ctrl-C stops all three.
#
# Two workers, so that a long generation run never blocks the interactive jobs (train h,
# auto-label, route, export, evaluate, import): one on `generation`, one on
# `default,ml,interactive` with the embedded beat (-B, once). Each has concurrency 1 (one pool
# process each: two ML models in memory at most). See docs/operations.md, "Queues and workers".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export NLTK_DATA=${NLTK_DATA:-$PWD/var/nltk_data}
PORT=${PORT:-8000}
.venv/bin/python manage.py collectstatic --noinput -v0
.venv/bin/python manage.py demo
.venv/bin/celery -A config worker -B -n interactive@%h -Q "${CELERY_INTERACTIVE_QUEUES:-default,ml,interactive}" \
  --concurrency "${CELERY_CONCURRENCY:-1}" --loglevel INFO >var/worker.log 2>&1 &
WORKER=$!
.venv/bin/celery -A config worker -n generation@%h -Q "${CELERY_GENERATION_QUEUES:-generation}" \
  --concurrency "${CELERY_GENERATION_CONCURRENCY:-1}" --loglevel INFO >var/worker-generation.log 2>&1 &
GENERATION_WORKER=$!
trap 'kill $WORKER $GENERATION_WORKER 2>/dev/null; wait $WORKER $GENERATION_WORKER 2>/dev/null' EXIT INT TERM
echo "==> Celery workers: interactive (pid $WORKER, var/worker.log), generation (pid $GENERATION_WORKER, var/worker-generation.log)"
echo "==> Counterpart at http://127.0.0.1:$PORT"
.venv/bin/python manage.py runserver "127.0.0.1:$PORT"
