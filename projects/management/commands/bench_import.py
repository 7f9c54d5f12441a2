"""``python manage.py bench_import [--rows 1000000] [--file PATH] [--keep]``

Measures a large pairs-jsonl import the way the import page runs it, and prints the figures
(no assertion: docs/data-and-formats.md quotes them with the command).

1. A synthetic sentiment pairs-jsonl file of ``--rows`` rows is written to a temporary folder
   (or ``--file`` is used).
2. **The request**: a real multipart ``POST /projects/<id>/import/`` goes through Django's
   WSGI handler (every middleware, the session, the CSRF check) with the body *streamed*
   from the file, as gunicorn hands it over; the upload handlers write it under
   ``MEDIA_ROOT/imports`` and the view queues the ``import`` job.
3. **The job** runs in this process (``job_execute``, the heartbeat thread on), as a worker
   would run it: check every row, then write them in batches.

Printed: rows, bytes, wall time of the request and of the job (and its rows/s), the peak
resident memory of this process after each step (``ru_maxrss``), and the rows in the
database. The bench project is deleted afterwards unless ``--keep`` (its rows through
``import_discard``, as a cancel would, timed too).
"""

from __future__ import annotations

import io
import json
import os
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.handlers.wsgi import WSGIHandler
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import Client

from projects.models import Candidate, Example, Job, Project
from projects.permissions import RESEARCHER
from projects.services.import_jobs import import_discard
from projects.services.jobs import job_execute
from projects.services.projects import project_create

WORDS = "the film was a quiet and moving story with fine acting but the plot felt slow and thin at times".split()


def write_pairs(path: Path, rows: int) -> None:
    """``rows`` sentiment pairs, about 300 bytes each, written line by line."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(rows):
            words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12))
            obj = {
                "id": f"bench-{i}",
                "group": f"orig-{i}",
                "original": {"fields": {"text": f"{words} ({i})"}, "label": "positive"},
                "counterfactual": {
                    "fields": {"text": f"{words.replace('fine', 'poor')} ({i})"},
                    "label": "negative",
                    "label_source": "human",
                },
            }
            fh.write(json.dumps(obj) + "\n")


class _Multipart(io.RawIOBase):
    """A multipart/form-data body read from the data file as the server reads the socket."""

    def __init__(self, head: bytes, path: Path, tail: bytes) -> None:
        self._parts: list[Any] = [io.BytesIO(head), open(path, "rb"), io.BytesIO(tail)]  # noqa: SIM115

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._parts:
            n = self._parts[0].readinto(buffer)
            if n:
                return int(n)
            self._parts.pop(0).close()
        return 0


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


class Command(BaseCommand):
    help = "Measure a large pairs-jsonl import through the import page's path (streamed upload + import job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rows", type=int, default=1_000_000)
        parser.add_argument("--file", help="use this pairs-jsonl file (sentiment) instead of generating one")
        parser.add_argument("--keep", action="store_true", help="keep the bench project (default: delete it)")

    def handle(self, *args: Any, **opts: Any) -> None:
        with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
            path = Path(opts["file"]) if opts["file"] else Path(tmp) / "pairs.jsonl"
            if not opts["file"]:
                t = time.perf_counter()
                write_pairs(path, opts["rows"])
                self.stdout.write(f"generated {opts['rows']} rows in {time.perf_counter() - t:.1f} s: {path}")
            self._bench(path, keep=opts["keep"])

    def _bench(self, path: Path, *, keep: bool) -> None:
        size = path.stat().st_size
        if size > settings.COUNTERPART["MAX_UPLOAD_BYTES"]:
            raise CommandError(f"{path} is over COUNTERPART_MAX_UPLOAD_BYTES")
        project = project_create(name=f"bench-import-{uuid.uuid4().hex[:8]}", task="sentiment")
        user, _ = User.objects.get_or_create(username="bench-import")
        user.groups.add(Group.objects.get_or_create(name=RESEARCHER)[0])
        client = Client()
        client.force_login(user)
        session = client.cookies[settings.SESSION_COOKIE_NAME].value
        csrf = uuid.uuid4().hex  # 32 characters: an unmasked CSRF secret, as cookie and field
        boundary = uuid.uuid4().hex
        fields = {"csrfmiddlewaretoken": csrf, "format": "pairs-jsonl"}
        head = "".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n' for k, v in fields.items()
        )
        head += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="pairs.jsonl"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        )
        tail = f"\r\n--{boundary}--\r\n".encode()
        length = len(head.encode()) + size + len(tail)
        host = (settings.ALLOWED_HOSTS or ["localhost"])[0].lstrip(".") or "localhost"
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": f"/projects/{project.pk}/import/",
            "SCRIPT_NAME": "",
            "SERVER_NAME": host,
            "SERVER_PORT": "443" if settings.SESSION_COOKIE_SECURE else "80",
            "HTTP_HOST": host,
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": f"multipart/form-data; boundary={boundary}",
            "CONTENT_LENGTH": str(length),
            "HTTP_COOKIE": f"{settings.SESSION_COOKIE_NAME}={session}; {settings.CSRF_COOKIE_NAME}={csrf}",
            "HTTP_REFERER": f"{'https' if settings.SESSION_COOKIE_SECURE else 'http'}://{host}/",
            "wsgi.input": io.BufferedReader(_Multipart(head.encode(), path, tail), 1 << 16),
            "wsgi.url_scheme": "https" if settings.SESSION_COOKIE_SECURE else "http",
            "wsgi.errors": sys.stderr,
            "wsgi.version": (1, 0),
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        from projects import tasks

        queued: list[int] = []
        real_send = tasks.job_execute_task.apply_async
        tasks.job_execute_task.apply_async = lambda args, **kw: queued.append(args[0])
        try:
            status: list[str] = []

            def start_response(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
                status.append(code)
                return lambda data: None

            rss0 = _peak_rss_mib()
            t = time.perf_counter()
            response = WSGIHandler()(environ, start_response)
            b"".join(response)
            request_s = time.perf_counter() - t
            rss_request = _peak_rss_mib()
        finally:
            tasks.job_execute_task.apply_async = real_send
        if not status or not status[0].startswith("200") or len(queued) != 1:
            raise CommandError(f"the import page answered {status[:1]} and queued {queued}")
        job_id = queued[0]
        self.stdout.write(f"request: {status[0]} in {request_s:.2f} s; job {job_id} queued")
        t = time.perf_counter()
        job = job_execute(job_id=job_id)
        job_s = time.perf_counter() - t
        rss_job = _peak_rss_mib()
        stored = Job.objects.get(pk=job_id).params["paths"][0]
        rows = {
            "originals": Example.objects.filter(project=project).count(),
            "pairs": Candidate.objects.filter(project=project).count(),
        }
        db = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        self.stdout.write(
            f"job: {job.status} in {job_s:.1f} s ({job.total / job_s:,.0f} rows/s, checked and written); "
            f"{job.result.get('summary', job.error)}"
        )
        self.stdout.write(
            f"bench_import: db={db} rows={job.total} bytes={size} request_s={request_s:.2f} job_s={job_s:.1f} "
            f"peak_rss_mib: start={rss0:.0f} after_request={rss_request:.0f} after_job={rss_job:.0f} "
            f"in_db={rows} upload_removed={not os.path.exists(stored)}"
        )
        if not keep:  # as a cancelled import would: the job's rows, a chunk per transaction
            t = time.perf_counter()
            import_discard(job_id=job_id)
            self.stdout.write(f"removed the job's rows in {time.perf_counter() - t:.1f} s (what a cancel costs)")
            Job.objects.filter(project=project).delete()
            Project.objects.filter(pk=project.pk).delete()
