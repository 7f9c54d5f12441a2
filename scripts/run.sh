#!/usr/bin/env bash
# Sets up, creates the demo project and runs Counterpart on embedded defaults:
# SQLite, a Celery worker over kombu's SQLAlchemy transport (a SQLite file, no server),
# and the web app at http://127.0.0.1:8000. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export NLTK_DATA=${NLTK_DATA:-$PWD/var/nltk_data}
# The Celery app alone defaults to the production settings (as config.wsgi does); this is local development.
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-config.settings.local}
PORT=${PORT:-8000}
.venv/bin/python manage.py collectstatic --noinput -v0
.venv/bin/python manage.py demo
.venv/bin/celery -A config worker -B -Q "${CELERY_WORKER_QUEUES:-default,ml,generation}" \
  --concurrency "${CELERY_CONCURRENCY:-1}" --loglevel INFO >var/worker.log 2>&1 &
WORKER=$!
trap 'kill $WORKER 2>/dev/null; wait $WORKER 2>/dev/null' EXIT INT TERM
echo "==> Celery worker (pid $WORKER) logging to var/worker.log"
echo "==> Counterpart at http://127.0.0.1:$PORT"
.venv/bin/python manage.py runserver "127.0.0.1:$PORT"
