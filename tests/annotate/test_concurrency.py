"""Many annotators at once: no item ever gets more than k answers, nobody gets an item twice,
no answer is stored twice. On PostgreSQL in-process threads hit the API concurrently (row
claims with FOR UPDATE SKIP LOCKED); on SQLite the load test command runs against a file
database behind gunicorn (in-memory test databases cannot be shared by threads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from django.db import connections
from django.db.models import Count, F
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.models import Annotation, Assignment, Item
from annotate.services.routing import project_route

from .factories import annotator, project_with_candidates

pytestmark = pytest.mark.postgres_too

REPO = Path(__file__).resolve().parents[2]


def _hammer(
    project_id: int, tokens: list[str], rounds: int, barrier: threading.Barrier, seen: list, errors: list
) -> None:
    def worker(token: str, idx: int) -> None:
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        try:
            barrier.wait()
            for _ in range(rounds):
                r = c.post(f"/api/v1/projects/{project_id}/next-item/")
                if r.status_code == 204:
                    break
                assert r.status_code == 200, r.content
                body = r.json()
                aid = body["assignment"]
                # everyone agrees (no plurality extension) and some submit twice at once
                s = c.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral"}, format="json")
                assert s.status_code == 201, s.content
                seen.append((aid, s.json()["id"]))
                if idx % 3 == 0:
                    again = c.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral"}, format="json")
                    assert again.status_code == 200 and again.json()["id"] == s.json()["id"]
        except Exception as exc:  # noqa: BLE001 - collected and asserted in the main thread
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(t, i)) for i, t in enumerate(tokens)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)


def _assert_invariants(project, seen) -> None:
    per_item = Counter(Annotation.objects.filter(project=project).values_list("item_id", flat=True))
    ks = dict(Item.objects.filter(project=project).values_list("id", "k"))
    assert all(n <= ks[i] for i, n in per_item.items())
    assert not Annotation.objects.values("item", "annotator").annotate(n=Count("id")).filter(n__gt=1).exists()
    stored = set(Annotation.objects.values_list("assignment_id", "id"))
    assert set(seen) <= stored and len(seen) == len(stored)
    # counters agree with the rows
    for item in Item.objects.filter(project=project).annotate(n=Count("annotations")):
        assert item.done == item.n
        live = Assignment.objects.filter(item=item, status__in=["leased", "submitted"]).count()
        assert item.taken == live <= item.k
    assert not Item.objects.filter(taken__gt=F("k")).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_annotators_postgres(require_postgres):
    project = project_with_candidates(n=20, k=3)
    project_route(project=project, budget=1.0, seed=0)
    users = [annotator(project) for _ in range(16)]
    tokens = [Token.objects.create(user=u).key for u in users]
    seen: list = []
    errors: list = []
    _hammer(project.pk, tokens, rounds=10, barrier=threading.Barrier(len(tokens)), seen=seen, errors=errors)
    assert errors == []
    _assert_invariants(project, seen)
    # 20 items x k=3 = 60 slots, 16 annotators x up to 10 rounds = 160 asks: the pool is drained
    assert len(seen) == 60
    assert Item.objects.filter(project=project, status="complete").count() == 20


@pytest.mark.slow
def test_load_test_command_keeps_invariants_on_sqlite(tmp_path):
    """The same invariant on SQLite: bench_annotation against a file database behind gunicorn
    (12 concurrent annotators, k=3, a small pool so that items fill up and run out)."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'bench.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "bench_annotation",
            "--items",
            "40",
            "--annotators",
            "12",
            "--seconds",
            "3",
            "--k",
            "3",
            "--workers",
            "2",
            "--threads",
            "4",
            "--json",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["database"] == "sqlite"
    assert result["submitted"] > 0
    assert (result["over_assigned"], result["lost"], result["duplicates"], result["counter_mismatch"]) == (0, 0, 0, 0)
    assert result["errors"] == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_expiry_skip_and_submit_postgres(require_postgres, settings):
    """Leases expire while others claim, skip and submit at the same time: slots are returned
    exactly once, late submits get 409 and write nothing, counters always equal the rows."""
    import random
    import time

    settings.COUNTERPART = {**settings.COUNTERPART, "LEASE_SECONDS": 1}
    project = project_with_candidates(n=12, k=2)
    project_route(project=project, budget=1.0, seed=0)
    users = [annotator(project) for _ in range(12)]
    tokens = [Token.objects.create(user=u).key for u in users]
    seen: list = []
    errors: list = []
    late: list = []
    barrier = threading.Barrier(len(tokens))

    def worker(token: str, idx: int) -> None:
        rng = random.Random(idx)
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        try:
            barrier.wait()
            for _ in range(8):
                r = c.post(f"/api/v1/projects/{project.pk}/next-item/")
                if r.status_code == 204:
                    time.sleep(0.3)  # leases of others may still expire and free slots
                    continue
                assert r.status_code == 200, r.content
                aid = r.json()["assignment"]
                roll = rng.random()
                if roll < 0.2:
                    assert c.post(f"/api/v1/assignments/{aid}/skip/", {}, format="json").status_code == 200
                    continue
                if roll < 0.4:
                    time.sleep(1.3)  # let the lease run out
                s = c.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral"}, format="json")
                if s.status_code == 409:
                    late.append(aid)
                else:
                    assert s.status_code == 201, s.content
                    seen.append((aid, s.json()["id"]))
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(t, i)) for i, t in enumerate(tokens)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert errors == []
    from datetime import timedelta

    from django.utils import timezone

    from annotate.services.assignments import assignments_expire

    assignments_expire(now=timezone.now() + timedelta(seconds=5))
    _assert_invariants(project, seen)
    assert late  # the expiry path was exercised
    assert not Annotation.objects.filter(assignment_id__in=late).exists()
    assert Assignment.objects.filter(pk__in=late, status="expired").count() == len(late)
