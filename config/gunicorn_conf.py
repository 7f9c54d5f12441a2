"""gunicorn's settings for serving the app: ``gunicorn -c config/gunicorn_conf.py config.wsgi``.

Every value comes from the environment (``GUNICORN_*``), with defaults chosen from the
annotation load tests (docs/annotation.md, "The annotator's flow under load"): a request of the
hot path is a few milliseconds of Python CPU plus several PostgreSQL round trips, so threaded
workers (``gthread``) overlap the waits, and two processes per core keep the cores busy while
one holds the GIL. Annotators keep a connection open between answers, seconds apart, so the
keep-alive outlasts a think time (75 s, as nginx's default). Uploads: docs/operations.md.
"""

from __future__ import annotations

import os

_cores = os.cpu_count() or 1

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
workers = int(os.environ.get("GUNICORN_WORKERS", str(2 * _cores)))
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "75"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))
# a worker that served this many requests is replaced (spread by the jitter): bounds slow leaks
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "20000"))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", "2000"))
