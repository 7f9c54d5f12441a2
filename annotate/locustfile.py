"""Locust scenarios for ``python manage.py bench_annotation_load`` (issues 25.2 and 33). No
Django here: Locust runs this file in its own process (gevent), started by the command, which
picks the user class (``--scenario``):

``ApiAnnotator`` (``--scenario api``): the annotation REST API (docs/api.md) with token auth.
Each user loops next-item → think → answer; with ``CP_LOAD_NEXT_IN_ANSWER=1`` the answer is
sent with ``?next=1`` and its 201 carries the next lease, so after the first item it is one
request per answer.

``BrowserAnnotator`` (``--scenario browser``): what the annotator page sends (templates/
annotate/item.html, static/js/annotate.js). A session (the command signs each user in before
the run, or ``CP_LOAD_LOGIN=1``: the log-in form with CSRF), ``GET`` of the item page, then per
item: think with it on screen → the htmx answer (form post with ``X-CSRFToken`` and
``HX-Request``) whose response is the stage with the next item — one request per answer. While
an item is on screen the page's heartbeat fires every ``hx-trigger="every Ns"`` (read from the
page; each new stage restarts it), so an annotator who pauses on an item (``CP_LOAD_PAUSE_RATE``
of items, 30–120 s) sends heartbeats. At ``CP_LOAD_SKIP_RATE`` of items the annotator skips
(with a reason) and at ``CP_LOAD_UNDO_RATE`` of answers presses Undo and answers again.

Environment (set by the command): ``CP_LOAD_PROJECT``, ``CP_LOAD_OUT`` (every request's name,
start time, latency and status, and every accepted answer, written as JSON when Locust quits),
``CP_LOAD_THINK_MIN`` / ``CP_LOAD_THINK_MAX``, ``CP_LOAD_AGREEMENT``; API: ``CP_LOAD_TOKENS``
(a file, one token a line; user i takes line i); browser: ``CP_LOAD_SESSIONS`` (a file, one
``username session-key`` a line), ``CP_LOAD_PASSWORD`` (with ``CP_LOAD_LOGIN=1``).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import time
from typing import Any

import gevent
from locust import FastHttpUser, constant, events, task

PROJECT = int(os.environ.get("CP_LOAD_PROJECT", "0"))
THINK = (float(os.environ.get("CP_LOAD_THINK_MIN", "2")), float(os.environ.get("CP_LOAD_THINK_MAX", "10")))
AGREEMENT = float(os.environ.get("CP_LOAD_AGREEMENT", "0.9"))
NEXT_IN_ANSWER = os.environ.get("CP_LOAD_NEXT_IN_ANSWER", "0") == "1"
SKIP_RATE = float(os.environ.get("CP_LOAD_SKIP_RATE", "0.03"))
UNDO_RATE = float(os.environ.get("CP_LOAD_UNDO_RATE", "0.02"))
PAUSE_RATE = float(os.environ.get("CP_LOAD_PAUSE_RATE", "0.02"))
PAUSE = tuple(float(x) for x in os.environ.get("CP_LOAD_PAUSE_SECONDS", "30,120").split(",")[:2])
LOGIN = os.environ.get("CP_LOAD_LOGIN", "0") == "1"


def _lines(var: str) -> list[str]:
    path = os.environ.get(var, "")
    if not path:
        return []
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().splitlines() if line]


_user_index = itertools.count()
_requests: list[tuple[str, float, float, int]] = []  # (name, started at, ms, status; 0 = no response)
# Every answer the server accepted: [assignment, annotation id] (API; browser: annotation id
# null, the stage does not show it); an undone answer is taken off again.
_answered: list[list[Any]] = []
_refused: list[str] = []  # answers the server refused (an error on the stage; the API's 4xx are failures)
_unknown: list[int] = []  # undos sent without a usable response: their answers are not checked either way


@events.request.add_listener
def _record(name: str, response_time: float, response: Any = None, exception: Any = None, **_: Any) -> None:
    status = 0 if exception is not None and response is None else int(getattr(response, "status_code", 0) or 0)
    _requests.append((name, time.time() - response_time / 1000, float(response_time), status))


@events.quitting.add_listener
def _dump(**_: Any) -> None:
    with open(os.environ["CP_LOAD_OUT"], "w", encoding="utf-8") as f:
        json.dump(
            {
                "requests": _requests,
                "answered": _answered,
                "refused": _refused,
                "unknown": _unknown,
                "users": next(_user_index),
            },
            f,
        )


def _pick(rng: random.Random, choices: list[str], key: int) -> str:
    """The annotator's choice: the item's "true" label (a function of ``key``) with probability
    AGREEMENT, else any offered choice."""
    labels = sorted(c for c in choices if c != "unclear") or choices
    truth = labels[key % len(labels)]
    return truth if rng.random() < AGREEMENT else rng.choice(choices)


class ApiAnnotator(FastHttpUser):
    wait_time = constant(0)  # the think time is spent with the item on screen, inside the task
    network_timeout = 300.0

    def on_start(self) -> None:
        i = next(_user_index)
        tokens = _lines("CP_LOAD_TOKENS")
        self.auth = {"Authorization": f"Token {tokens[i % len(tokens)]}"}
        self.rng = random.Random(i)
        self.lease: dict[str, Any] | None = None  # the next lease carried by the last answer

    def _next_item(self) -> dict[str, Any] | None:
        with self.client.post(
            f"/api/v1/projects/{PROJECT}/next-item/", headers=self.auth, name="next-item", catch_response=True
        ) as resp:
            if resp.status_code == 204:
                resp.success()
                return None
            if resp.status_code != 200:
                resp.failure(f"next-item {resp.status_code}: {(resp.text or '')[:200]}")
                return None
            body: dict[str, Any] = resp.json()
            return body

    @task
    def annotate_one(self) -> None:
        body, self.lease = self.lease or self._next_item(), None
        time.sleep(self.rng.uniform(*THINK))  # gevent-patched: the annotator reads and decides (or waits)
        if body is None:
            return
        choice = _pick(self.rng, body["choices"], int(body["item"]["id"]))
        url = f"/api/v1/assignments/{body['assignment']}/annotation/" + ("?next=1" if NEXT_IN_ANSWER else "")
        with self.client.post(
            url,
            json={"choice": choice, "duration_ms": self.rng.randint(2000, 10000)},
            headers=self.auth,
            name="answer",  # with ?next=1: answer-and-next
            catch_response=True,
        ) as resp:
            if resp.status_code != 201:
                resp.failure(f"answer {resp.status_code}: {(resp.text or '')[:200]}")
                return
            out = resp.json()
            _answered.append([int(body["assignment"]), int(out["id"])])
            if NEXT_IN_ANSWER:
                self.lease = out.get("next")


_STAGE = re.compile(r'<section id="stage"[^>]*data-assignment="(\d*)"')
_CHOICE = re.compile(r'<button type="submit" name="choice" value="([^"]+)"')
_UNDO = re.compile(r'hx-post="(/annotate/assignments/\d+/undo/)"')
_HEARTBEAT = re.compile(r'hx-trigger="every (\d+)s"')
_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_ERROR = re.compile(r'<p class="error" role="alert">([^<]*)')
_UNDONE_ALREADY = "there is no answer to undo"  # annotate.services.assignments.annotation_undo's Conflict


class BrowserAnnotator(FastHttpUser):
    """One annotator in a browser: the page's own requests, in the page's order."""

    wait_time = constant(0)
    network_timeout = 300.0  # a saturated server answers late; a browser waits (a timeout would leave undos unknown)

    def on_start(self) -> None:
        i = next(_user_index)
        self.rng = random.Random(i)
        sessions = _lines("CP_LOAD_SESSIONS")
        username, session_key = sessions[i % len(sessions)].split()
        self.stage = ""
        self.heartbeat: gevent.Greenlet | None = None
        if LOGIN:
            self._login(username)
        else:  # signed in before the run (the command wrote the session)
            self.client.cookiejar.set_cookie(_cookie("sessionid", session_key))
        with self.client.get(f"/annotate/projects/{PROJECT}/", name="page", catch_response=True) as resp:
            if resp.status_code != 200 or _STAGE.search(resp.text or "") is None:
                resp.failure(f"page {resp.status_code}: {(resp.text or '')[:200]}")
                return
            self._show(resp.text)

    def on_stop(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.kill(block=False)

    def _login(self, username: str) -> None:
        with self.client.get("/accounts/login/", name="login-page", catch_response=True) as resp:
            found = _CSRF_INPUT.search(resp.text or "")
            if resp.status_code != 200 or found is None:
                resp.failure(f"login page {resp.status_code}")
                return
        with self.client.post(
            "/accounts/login/",
            data={"username": username, "password": os.environ["CP_LOAD_PASSWORD"], "csrfmiddlewaretoken": found[1]},
            headers={"Referer": f"{self.host}/accounts/login/"},
            name="login",
            allow_redirects=False,
            catch_response=True,
        ) as resp:
            if resp.status_code != 302:
                resp.failure(f"login {resp.status_code}: {(resp.text or '')[:200]}")

    def _csrf(self) -> str:
        for c in self.client.cookiejar:
            if c.name == "csrftoken":
                return str(c.value)
        return ""

    def _headers(self) -> dict[str, str]:
        return {
            "X-CSRFToken": self._csrf(),
            "HX-Request": "true",
            "HX-Target": "stage",
            "HX-Current-URL": f"{self.host}/annotate/projects/{PROJECT}/",
            "Referer": f"{self.host}/annotate/projects/{PROJECT}/",
        }

    def _show(self, html: str) -> None:
        """A new stage is on screen: its heartbeat timer starts afresh (htmx's ``every``)."""
        self.stage = html
        if self.heartbeat is not None:
            self.heartbeat.kill(block=False)
            self.heartbeat = None
        assignment = self._assignment()
        found = _HEARTBEAT.search(html)
        if assignment and found:
            self.heartbeat = gevent.spawn(self._beat, assignment, int(found[1]))

    def _beat(self, assignment: int, every: int) -> None:
        while True:
            gevent.sleep(every)
            with self.client.post(
                f"/annotate/assignments/{assignment}/heartbeat/",
                headers=self._headers(),
                name="heartbeat",
                catch_response=True,
            ) as resp:
                if resp.status_code == 204:
                    continue
                if resp.status_code == 286:
                    # htmx's "stop polling": the lease ended (answered, undone or expired while
                    # this heartbeat was on its way); a browser stops polling there, no error
                    resp.success()
                else:
                    resp.failure(f"heartbeat {resp.status_code}: {(resp.text or '')[:200]}")
                return

    def _assignment(self) -> int:
        found = _STAGE.search(self.stage)
        return int(found[1]) if found and found[1] else 0

    def _post_stage(self, url: str, data: dict[str, str], name: str) -> bool | None:
        """True: done (the new stage is on screen); False: refused (a message on the stage, or a
        4xx); None: no usable answer (no response, a 5xx): whether it happened is unknown."""
        with self.client.post(url, data=data, headers=self._headers(), name=name, catch_response=True) as resp:
            html = resp.text or ""
            if resp.status_code != 200 or _STAGE.search(html) is None:
                resp.failure(f"{name} {resp.status_code}: {html[:200]}")
                return False if 400 <= resp.status_code < 500 else None
            error = _ERROR.search(html.split('class="item', 1)[0])
            if error is not None:
                _refused.append(f"{name}: {error[1]}")
            self._show(html)
            return error is None

    @task
    def annotate_one(self) -> None:
        assignment = self._assignment()
        think = self.rng.uniform(*THINK)
        if assignment and self.rng.random() < PAUSE_RATE:
            think += self.rng.uniform(*PAUSE)  # a break with the item on screen: heartbeats keep the lease
        time.sleep(think)
        if not assignment:  # nothing left for now (or blocked): come back later with a reload
            with self.client.get(f"/annotate/projects/{PROJECT}/", name="page", catch_response=True) as resp:
                if resp.status_code == 200:
                    self._show(resp.text or "")
            return
        if self.rng.random() < SKIP_RATE:
            url = f"/annotate/assignments/{assignment}/skip/"
            self._post_stage(url, {"reason": "unsure"}, "skip")
            return
        choices = _CHOICE.findall(self.stage)
        if not choices:
            return
        data = {"choice": _pick(self.rng, choices, assignment), "duration_ms": str(int(think * 1000))}
        if self._post_stage(f"/annotate/assignments/{assignment}/answer/", data, "answer"):
            _answered.append([assignment, None])
            if self.rng.random() < UNDO_RATE:
                undo = _UNDO.search(self.stage)
                if undo is None:
                    return
                undone = int(undo[1].split("/")[3])
                # Unknown until the server's answer says otherwise: locust stops its users at the
                # end of the run in the middle of a request, and an undo cut off there may have
                # been done by the server (an answer kept in _answered would then read as lost).
                _answered[:] = [a for a in _answered if a[0] != undone]
                _unknown.append(undone)
                outcome = self._post_stage(undo[1], {}, "undo")
                if outcome is True:
                    _unknown.remove(undone)
                elif outcome is False and _UNDONE_ALREADY not in self.stage:
                    # refused ("the undo window has passed", "… aggregated"): the answer stays.
                    # Not so for "no answer to undo": an earlier attempt of this undo (the client
                    # retries a request whose connection broke) may have done it; it stays unknown
                    _unknown.remove(undone)
                    _answered.append([undone, None])


def _cookie(name: str, value: str) -> Any:
    from http.cookiejar import Cookie

    return Cookie(0, name, value, None, False, "127.0.0.1", False, False, "/", True, False, None, False, None, None, {})
