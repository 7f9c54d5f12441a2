#!/usr/bin/env bash
# Sets up, creates the demo project and runs Counterpart on embedded defaults:
# SQLite, Celery workers over kombu's SQLAlchemy transport (a SQLite file, no server),
# and the web app at http://127.0.0.1:8000 (PORT=8001 make run for another port). Ctrl-C stops all three.
#
# Two workers (scripts/workers.sh), so that a long generation run never blocks the interactive
# jobs (train h, auto-label, route, export, evaluate, import). See docs/operations.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8000}
# A port something already answers on is said at once, with the way out, before minutes of set-up
# and two workers that runserver's own "That port is already in use" would only stop again.
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  echo "!! port $PORT on 127.0.0.1 is already in use (another server?): stop it, or serve on another port, e.g. PORT=$((PORT + 1)) make run" >&2
  exit 1
fi
bash scripts/setup.sh
export NLTK_DATA=${NLTK_DATA:-$PWD/var/nltk_data}
# The Celery app alone defaults to the production settings (as config.wsgi does); this is local development.
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-config.settings.local}
.venv/bin/python manage.py collectstatic --noinput -v0
.venv/bin/python manage.py demo --url "http://127.0.0.1:$PORT"
# Every job queue declared once, here, before the workers and the web app start: on the embedded
# SQLite broker a queue is a row, and two processes inserting it at once race (docs/operations.md).
.venv/bin/python manage.py jobs --declare-queues
bash scripts/workers.sh &
WORKERS=$!
trap 'kill $WORKERS 2>/dev/null; wait $WORKERS 2>/dev/null' EXIT INT TERM
echo "==> Counterpart at http://127.0.0.1:$PORT"
.venv/bin/python manage.py runserver "127.0.0.1:$PORT"
