#!/usr/bin/env bash
# The two Celery workers (`make worker`; `make run` starts this in the background):
#   interactive@  queues default,ml,interactive, with the embedded beat (-B, once):
#                 train, auto-label, route, export, evaluate, import and the housekeeping;
#   generation@   queue generation: long generation runs, which so never block the above.
# Concurrency 1 each (one pool process each: two ML models in memory at most). Logs go to
# var/worker.log and var/worker-generation.log. Ctrl-C or TERM stops both (a worker busy with a job
# after WORKERS_STOP_SECONDS, 10, is killed: the job resumes when they start again).
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
# Stopping: Celery's warm shutdown (TERM) waits for the running job, which may take hours, and a
# second Ctrl-C's cold shutdown can hang for ever in billiard's pool finaliser. So a worker still
# there after WORKERS_STOP_SECONDS is killed with its pool processes: its job stays `running`, its
# heartbeat stops, and the workers' start-up sweep resumes it after the last committed batch
# (docs/operations.md, "Claims, heartbeats and resume after a killed worker").
stop_workers() {
  local pids pid busy child
  pids="$WORKER $GENERATION_WORKER"
  kill $pids 2>/dev/null || true
  for _ in $(seq $((${WORKERS_STOP_SECONDS:-10} * 4))); do
    busy=
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && busy="$busy $pid"; done
    [ -z "$busy" ] && return 0
    sleep 0.25
  done
  echo "==> a worker was still finishing a job after ${WORKERS_STOP_SECONDS:-10} s: stopped it; the job resumes where it stopped when the workers start again" >&2
  for pid in $busy; do
    child=$(pgrep -P "$pid" || true)  # its pool processes, read before it dies
    kill -KILL "$pid" $child 2>/dev/null || true
  done
  wait $pids 2>/dev/null || true
}
trap stop_workers EXIT INT TERM
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
