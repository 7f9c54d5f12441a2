"""Locust scenario for ``python manage.py bench_annotation_load`` (issue 25.2): simulated
annotators on the annotation API (docs/api.md), token auth, each doing next-item → think
(uniform ``CP_LOAD_THINK_MIN``–``CP_LOAD_THINK_MAX`` seconds, the item on screen) → answer,
in a loop. No Django here: Locust runs it in its own process (gevent), started by the command.

Environment (set by the command): ``CP_LOAD_TOKENS`` (a file, one API token a line; user i
takes token i), ``CP_LOAD_PROJECT`` (project id), ``CP_LOAD_OUT`` (where every request's name,
start time, latency and status, and the (assignment, annotation) of every 201, are written as
JSON when Locust quits), ``CP_LOAD_THINK_MIN`` / ``CP_LOAD_THINK_MAX``, ``CP_LOAD_AGREEMENT``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from typing import Any

from locust import FastHttpUser, constant, events, task

TOKENS = open(os.environ["CP_LOAD_TOKENS"], encoding="utf-8").read().split()  # noqa: SIM115 - read once at start
PROJECT = int(os.environ["CP_LOAD_PROJECT"])
THINK = (float(os.environ.get("CP_LOAD_THINK_MIN", "2")), float(os.environ.get("CP_LOAD_THINK_MAX", "10")))
AGREEMENT = float(os.environ.get("CP_LOAD_AGREEMENT", "0.9"))

_user_index = itertools.count()
_requests: list[tuple[str, float, float, int]] = []  # (name, started at, ms, status; 0 = no response)
_answered: list[tuple[int, int]] = []  # (assignment, annotation) of every 201


@events.request.add_listener
def _record(name: str, response_time: float, response: Any = None, exception: Any = None, **_: Any) -> None:
    status = 0 if exception is not None and response is None else int(getattr(response, "status_code", 0) or 0)
    _requests.append((name, time.time() - response_time / 1000, float(response_time), status))


@events.quitting.add_listener
def _dump(**_: Any) -> None:
    with open(os.environ["CP_LOAD_OUT"], "w", encoding="utf-8") as f:
        json.dump({"requests": _requests, "answered": _answered, "users": next(_user_index)}, f)


class Annotator(FastHttpUser):
    wait_time = constant(0)  # the think time is spent with the item on screen, inside the task

    def on_start(self) -> None:
        i = next(_user_index)
        self.token = TOKENS[i % len(TOKENS)]
        self.rng = random.Random(i)
        self.auth = {"Authorization": f"Token {self.token}"}

    @task
    def annotate_one(self) -> None:
        with self.client.post(
            f"/api/v1/projects/{PROJECT}/next-item/", headers=self.auth, name="next-item", catch_response=True
        ) as resp:
            if resp.status_code == 204:
                resp.success()
                time.sleep(self.rng.uniform(*THINK))  # nothing left for now: come back later
                return
            if resp.status_code != 200:
                resp.failure(f"next-item {resp.status_code}: {(resp.text or '')[:200]}")
                return
            body = resp.json()
        time.sleep(self.rng.uniform(*THINK))  # gevent-patched: the annotator reads and decides
        labels = [c for c in body["choices"] if c != "unclear"]
        truth = sorted(labels)[body["item"]["id"] % len(labels)]
        choice = truth if self.rng.random() < AGREEMENT else self.rng.choice(body["choices"])
        with self.client.post(
            f"/api/v1/assignments/{body['assignment']}/annotation/",
            json={"choice": choice, "duration_ms": self.rng.randint(2000, 10000)},
            headers=self.auth,
            name="answer",
            catch_response=True,
        ) as resp:
            if resp.status_code == 201:
                _answered.append((int(body["assignment"]), int(resp.json()["id"])))
            else:
                resp.failure(f"answer {resp.status_code}: {(resp.text or '')[:200]}")
