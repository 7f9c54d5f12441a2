"""Locust scenario against Label Studio for the anchor (issue 33): the same annotate-then-
answer loop as ``annotate/locustfile.py``'s ``ApiAnnotator`` without ``?next=1``: ask for the
next task (``GET /api/projects/{id}/next/``, Label Studio's labelling stream), think, answer it
(``POST /api/tasks/{id}/annotations/`` with one choice). Token auth (legacy tokens, switched on
by ``ls_setup.py``). Writes the same dump as ``annotate/locustfile.py`` (``CP_LOAD_OUT``):
every request's name, start, latency and status, and every (task, annotation) answered.

Environment: ``CP_LOAD_TOKENS`` (a file, one token a line), ``CP_LOAD_PROJECT``, ``CP_LOAD_OUT``,
``CP_LOAD_THINK_MIN`` / ``CP_LOAD_THINK_MAX``, ``CP_LOAD_AGREEMENT``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from typing import Any

from locust import FastHttpUser, constant, events, task

PROJECT = int(os.environ.get("CP_LOAD_PROJECT", "0"))
THINK = (float(os.environ.get("CP_LOAD_THINK_MIN", "2")), float(os.environ.get("CP_LOAD_THINK_MAX", "10")))
AGREEMENT = float(os.environ.get("CP_LOAD_AGREEMENT", "0.9"))
CHOICES = ["entailment", "neutral", "contradiction"]

_user_index = itertools.count()
_requests: list[tuple[str, float, float, int]] = []
_answered: list[list[Any]] = []


@events.request.add_listener
def _record(name: str, response_time: float, response: Any = None, exception: Any = None, **_: Any) -> None:
    status = 0 if exception is not None and response is None else int(getattr(response, "status_code", 0) or 0)
    _requests.append((name, time.time() - response_time / 1000, float(response_time), status))


@events.quitting.add_listener
def _dump(**_: Any) -> None:
    with open(os.environ["CP_LOAD_OUT"], "w", encoding="utf-8") as f:
        json.dump({"requests": _requests, "answered": _answered, "refused": [], "users": next(_user_index)}, f)


class LabelStudioAnnotator(FastHttpUser):
    wait_time = constant(0)
    network_timeout = 300.0

    def on_start(self) -> None:
        i = next(_user_index)
        with open(os.environ["CP_LOAD_TOKENS"], encoding="utf-8") as f:
            tokens = f.read().split()
        self.auth = {"Authorization": f"Token {tokens[i % len(tokens)]}"}
        self.rng = random.Random(i)

    @task
    def annotate_one(self) -> None:
        with self.client.get(
            f"/api/projects/{PROJECT}/next/", headers=self.auth, name="next-item", catch_response=True
        ) as resp:
            if resp.status_code == 404:  # Label Studio's "no more tasks"
                resp.success()
                time.sleep(self.rng.uniform(*THINK))
                return
            if resp.status_code != 200:
                resp.failure(f"next {resp.status_code}: {(resp.text or '')[:200]}")
                return
            body = resp.json()
        time.sleep(self.rng.uniform(*THINK))
        truth = CHOICES[int(body["id"]) % len(CHOICES)]
        choice = truth if self.rng.random() < AGREEMENT else self.rng.choice(CHOICES)
        result = [{"from_name": "label", "to_name": "hypothesis", "type": "choices", "value": {"choices": [choice]}}]
        with self.client.post(
            f"/api/tasks/{body['id']}/annotations/?project={PROJECT}",
            json={"result": result, "lead_time": self.rng.uniform(2, 10)},
            headers=self.auth,
            name="answer",
            catch_response=True,
        ) as resp:
            if resp.status_code == 201:
                _answered.append([int(body["id"]), int(resp.json()["id"])])
            else:
                resp.failure(f"answer {resp.status_code}: {(resp.text or '')[:200]}")
