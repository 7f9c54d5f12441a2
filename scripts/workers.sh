#!/usr/bin/env bash
# The two Celery workers (`make worker`; `make run` starts this in the background):
#   interactive@  queues default,ml,interactive, with the embedded beat (-B, once):
#                 train, auto-label, route, export, evaluate, import and the housekeeping;
#   generation@   queue generation: long generation runs, which so never block the above.
# Concurrency 1 each (one pool process each: two ML models in memory at most). Logs go to
# var/worker.log and var/worker-generation.log. Ctrl-C or TERM stops both.
# See docs/operations.md, "Queues and workers".
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
# The Celery app's default is the production settings (as config.wsgi's); here, local ones.
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-config.settings.local}
# Every job queue declared once, before any worker starts: on the embedded SQLite broker a queue
# is a row, and two processes inserting it at once race in kombu's SQLAlchemy transport.
.venv/bin/python manage.py jobs --declare-queues
.venv/bin/celery -A config worker -B -n interactive@%h -Q "${CELERY_INTERACTIVE_QUEUES:-default,ml,interactive}" \
  --concurrency "${CELERY_CONCURRENCY:-1}" --loglevel INFO >var/worker.log 2>&1 &
WORKER=$!
GENERATION_WORKER=
trap 'kill $WORKER $GENERATION_WORKER 2>/dev/null; wait $WORKER $GENERATION_WORKER 2>/dev/null' EXIT INT TERM
# The second worker starts once the first is ready: one heavy start-up at a time (the queues'
# rows already exist, declared above, so the two no longer race to insert them either).
for _ in $(seq 240); do
  grep -q " ready\.$" var/worker.log && break
  kill -0 $WORKER 2>/dev/null || { echo "the interactive worker stopped; see var/worker.log" >&2; exit 1; }
  sleep 0.5
done
.venv/bin/celery -A config worker -n generation@%h -Q "${CELERY_GENERATION_QUEUES:-generation}" \
  --concurrency "${CELERY_GENERATION_CONCURRENCY:-1}" --loglevel INFO >var/worker-generation.log 2>&1 &
GENERATION_WORKER=$!
echo "==> Celery workers: interactive (pid $WORKER, var/worker.log), generation (pid $GENERATION_WORKER, var/worker-generation.log)"
wait $WORKER $GENERATION_WORKER
