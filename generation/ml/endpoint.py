"""A client for an OpenAI-compatible model server (vLLM, TGI, llama.cpp server, Ollama,
``transformers serve``, a hosted API): chat completions with ``n`` samples, bounded
concurrency, timeouts, retries with exponential backoff that honour ``Retry-After``, and a
response cache on disk. No Django: the service builds :class:`EndpointConfig` from the settings.

* **Samples.** A request asks for ``n`` choices; a server that returns fewer (``transformers
  serve``, llama.cpp and Ollama ignore ``n``) is asked again with the next seeds, and from then
  on every request is split into ``n`` single-sample requests sent side by side.
* **Retries.** A connection error, a timeout, HTTP 429 or a 5xx is retried up to
  ``max_retries`` times, waiting ``backoff * 2**attempt`` seconds (at most ``max_backoff``), or
  what ``Retry-After`` says. Then :class:`~generation.ml.base.BackendUnavailable` says what
  failed, in words. A refused key (401/403) or another 4xx is not retried.
* **Cache.** Each request's choices are stored in a SQLite file under a key made of the model,
  the messages and every sampling parameter (the seed included), so a resumed or repeated run
  sends nothing it already sent.
* **Cancel.** Requests run on worker threads; the calling thread waits in 0.25 s steps and asks
  ``should_stop`` (the service's cancel probe, which reads the database: it is only ever called
  from the calling thread). A cancel raises :class:`~generation.ml.base.StopRequested` at once;
  requests in flight finish in the background and their answers are dropped (cached).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from generation.ml.base import BackendUnavailable, GeneratorConfigError, StopHook, StopRequested

Message = tuple[str, str]  # (role, content)
# where a prompting generator's model answers: "auto" (the service's choice: the endpoint when
# COUNTERPART_LLM_BASE_URL is set, else a local path, else the bundled SmolLM2), "bundled",
# "local" (a path) or "endpoint" (this module)
BACKENDS = ("auto", "bundled", "local", "endpoint")


class EndpointError(GeneratorConfigError):
    """The endpoint failed its check at the run's start (unreachable, model not served, key
    refused): the run fails with this sentence before any original is touched."""


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    model: str
    api_key: str = field(default="", repr=False)  # never in a repr, a log line or the database
    concurrency: int = 4
    timeout: float = 60.0
    max_retries: int = 5
    backoff: float = 1.0
    max_backoff: float = 30.0
    cache_path: str = ""

    @property
    def root(self) -> str:
        """The API root ending in ``/v1`` (given with or without it)."""
        url = self.base_url.strip().rstrip("/")
        return url if url.endswith("/v1") else f"{url}/v1"


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[Message, ...]
    n: int = 1
    temperature: float = 0.8
    top_p: float = 1.0
    max_tokens: int = 32
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def payload(self, model: str, n: int, seed: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "messages": [{"role": r, "content": c} for r, c in self.messages],
            "n": n,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        if seed is not None:
            body["seed"] = seed
        if self.stop:
            body["stop"] = list(self.stop)
        return body


class Usage:
    """Counters of one client (thread-safe): what the run page and the metrics show."""

    FIELDS = ("requests", "retries", "cache_hits", "prompt_tokens", "completion_tokens", "seconds")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: dict[str, float] = dict.fromkeys(self.FIELDS, 0)

    def add(self, **counts: float) -> None:
        with self._lock:
            for k, v in counts.items():
                self.values[k] = self.values.get(k, 0) + v

    def as_dict(self) -> dict[str, float]:
        with self._lock:
            out = dict(self.values)
        out["seconds"] = round(float(out["seconds"]), 3)
        return {k: (v if k == "seconds" else int(v)) for k, v in out.items()}


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class ResponseCache:
    """``key -> choices`` in a SQLite file (shared by the worker processes of one machine)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, choices TEXT NOT NULL)")

    @staticmethod
    def key(payload: dict[str, Any]) -> str:
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def get(self, key: str) -> list[str] | None:
        if self._conn is None:
            return None
        with self._lock:
            row = self._conn.execute("SELECT choices FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else [str(c) for c in json.loads(row[0])]

    def put(self, key: str, choices: Sequence[str]) -> None:
        if self._conn is None:
            return
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, choices) VALUES (?, ?)", (key, json.dumps(list(choices)))
            )

    def close(self) -> None:
        if self._conn is not None:
            with self._lock:
                self._conn.close()
            self._conn = None


class EndpointClient:
    def __init__(
        self,
        config: EndpointConfig,
        *,
        should_stop: StopHook | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        import httpx

        if not config.base_url.strip():
            raise EndpointError("no model server configured: set COUNTERPART_LLM_BASE_URL")
        if not config.model.strip():
            raise EndpointError("no model named for the server: set COUNTERPART_LLM_MODEL")
        self.config = config
        self.should_stop = should_stop
        self.usage = Usage()
        self.cache = ResponseCache(config.cache_path)
        self.single_sample = False  # learnt: the server ignores ``n``
        self._cancelled = threading.Event()
        self._sleep = sleep if sleep is not None else self._cancellable_sleep
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(config.timeout, connect=min(10.0, config.timeout)),
            limits=httpx.Limits(max_connections=max(1, config.concurrency)),
        )

    # -- the run's start -------------------------------------------------------------------
    def check(self) -> str:
        """Reachable, model served, key accepted; a sentence saying what answers. Raises
        :class:`EndpointError` with the reason otherwise. ``/v1/models`` is asked first; a
        server that cannot list its models (``transformers serve`` lists only its cache) or
        does not list this one among an empty list is asked a one-token chat completion."""
        import httpx

        root, model = self.config.root, self.config.model
        try:
            r = self._http.get(f"{root}/models", timeout=min(10.0, self.config.timeout))
        except httpx.HTTPError as exc:
            raise EndpointError(f"the model server at {root} cannot be reached: {_why(exc)}") from None
        self._refused_key(r.status_code)
        served: list[str] = []
        if r.status_code == 200:
            try:
                served = [str(m.get("id")) for m in r.json().get("data", []) if isinstance(m, dict)]
            except (ValueError, AttributeError):
                served = []
            if model in served:
                return f"model {model!r} at {root} (an OpenAI-compatible server)"
            if served:
                shown = ", ".join(served[:5]) + (" …" if len(served) > 5 else "")
                raise EndpointError(f"the model server at {root} does not serve {model!r}; it serves: {shown}")
        probe = ChatRequest(messages=(("user", "Say OK."),), n=1, temperature=0.0, max_tokens=1)
        try:
            r = self._http.post(f"{root}/chat/completions", json=probe.payload(model, 1, 0))
        except httpx.HTTPError as exc:
            raise EndpointError(f"the model server at {root} cannot be reached: {_why(exc)}") from None
        self._refused_key(r.status_code)
        if r.status_code != 200:
            raise EndpointError(
                f"the model server at {root} did not answer a test request for {model!r} "
                f"(HTTP {r.status_code}: {_body(r)})"
            )
        return f"model {model!r} at {root} (an OpenAI-compatible server; it does not list its models)"

    def _refused_key(self, status: int) -> None:
        if status in (401, 403):
            given = "the key in COUNTERPART_LLM_API_KEY" if self.config.api_key else "no API key"
            raise EndpointError(
                f"the model server at {self.config.root} refused {given} (HTTP {status}): "
                "set COUNTERPART_LLM_API_KEY to a key it accepts"
            )

    # -- requests ---------------------------------------------------------------------------
    def complete_many(self, requests: Sequence[ChatRequest]) -> list[list[str]]:
        """``n`` answers (the message contents) per request, in order. At most ``concurrency``
        requests are in flight. Raises ``StopRequested`` on a cancel, ``BackendUnavailable``
        when the server stays unreachable through the retries."""
        started = time.monotonic()
        parts: list[tuple[int, ChatRequest, int, int]] = []  # (request index, request, n, first sample)
        for i, req in enumerate(requests):
            if self.single_sample and req.n > 1:
                parts.extend((i, req, 1, k) for k in range(req.n))
            else:
                parts.append((i, req, req.n, 0))
        out: list[list[str]] = [[] for _ in requests]
        pool = ThreadPoolExecutor(max_workers=max(1, self.config.concurrency), thread_name_prefix="llm-endpoint")
        try:
            futures: dict[Future[list[str]], int] = {
                pool.submit(self._answers, req, n, first): i for i, req, n, first in parts
            }
            pending = set(futures)
            results: dict[Future[list[str]], list[str]] = {}
            while pending:
                done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                for f in done:
                    results[f] = f.result()  # BackendUnavailable propagates
                if self.should_stop is not None and self.should_stop():
                    self._cancelled.set()
                    raise StopRequested()
            for f, i in futures.items():  # in submission order: samples keep their seed order
                out[i].extend(results[f])
        except BaseException:
            self._cancelled.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            self.usage.add(seconds=time.monotonic() - started)
        pool.shutdown(wait=False)
        return [o[: r.n] for o, r in zip(out, requests, strict=True)]

    def _answers(self, req: ChatRequest, n: int, first: int) -> list[str]:
        """``n`` answers from sample ``first`` on: one request (cached), then one more per
        missing answer, each with the next seed, while the server returns fewer choices than
        asked."""
        got = self._cached_post(req, n, first)
        k = first + 1
        while got and len(got) < n:  # a server that answers nothing is not asked again
            self.single_sample = True
            more = self._cached_post(req, 1, k)
            if not more:
                break
            got.extend(more)
            k += 1
        return got[:n]

    def _cached_post(self, req: ChatRequest, n: int, sample: int) -> list[str]:
        """Answers to ``req`` asked for ``n`` samples from sample number ``sample`` on (its
        seed is the request's seed + ``sample``)."""
        seed = None if req.seed is None else req.seed + sample
        payload = req.payload(self.config.model, n, seed)
        key = ResponseCache.key({"root": self.config.root, "sample": sample, **payload})
        hit = self.cache.get(key)
        if hit is not None:
            self.usage.add(cache_hits=1)
            return hit
        body = self._post("/chat/completions", payload)
        choices = sorted(body.get("choices") or [], key=lambda c: int(c.get("index", 0) or 0))
        texts = [str(((c.get("message") or {}).get("content")) or c.get("text") or "") for c in choices]
        usage = body.get("usage") or {}
        self.usage.add(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )
        self.cache.put(key, texts)
        return texts

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        import httpx

        url = f"{self.config.root}{path}"
        retries = max(0, self.config.max_retries)
        reason = ""
        for attempt in range(retries + 1):
            if self._cancelled.is_set():
                raise StopRequested()
            wait_s = self.config.backoff * (2**attempt)
            try:
                r = self._http.post(url, json=payload)
            except httpx.HTTPError as exc:
                reason = _why(exc)
            else:
                self.usage.add(requests=1)
                if r.status_code == 200:
                    try:
                        body: dict[str, Any] = r.json()
                    except ValueError:
                        reason = f"an answer that is not JSON ({_body(r)})"
                    else:
                        return body
                elif r.status_code == 429 or r.status_code >= 500:
                    reason = f"HTTP {r.status_code} ({_body(r)})"
                    wait_s = retry_after_seconds(r.headers.get("retry-after")) or wait_s
                else:
                    self._refused_key(r.status_code)
                    raise BackendUnavailable(
                        f"the model server at {self.config.root} refused a request (HTTP {r.status_code}: {_body(r)})"
                    )
            if attempt == retries:
                break
            self.usage.add(retries=1)
            self._sleep(min(wait_s, self.config.max_backoff))
        raise BackendUnavailable(
            f"the model server at {self.config.root} did not answer after {retries + 1} tries; last: {reason}"
        )

    def _cancellable_sleep(self, seconds: float) -> None:
        if self._cancelled.wait(timeout=max(0.0, seconds)):
            raise StopRequested()

    def close(self) -> None:
        self._cancelled.set()
        self._http.close()
        self.cache.close()


def _why(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _body(r: Any) -> str:
    try:
        text = str(r.text)
    except Exception:  # noqa: BLE001 - a body that cannot be read says nothing more
        return "no body"
    return " ".join(text.split())[:200] or "empty body"
