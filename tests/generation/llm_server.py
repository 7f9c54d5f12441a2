"""A real OpenAI-compatible model server for the endpoint tests: ``transformers serve`` (from
``transformers[serving]``) serving the bundled SmolLM2-135M-Instruct, and a small real HTTP proxy
that answers 429 for a while before it forwards. Nothing here is a mock: every answer comes
from the model.

``transformers serve`` cannot load the GGUF file itself (its config names no architecture), so
it serves the converted folder :func:`generation.ml.bundled_lm.ensure_converted` writes (the
same weights, dequantized, that the in-process backend loads)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx


def sampling_folder(model_dir: str, dest: str) -> str:
    """``model_dir`` as served for sampling: ``transformers serve`` decodes with the model's
    ``generation_config.json`` (greedy unless it says ``do_sample``) and only overrides the
    temperature, top-p and seed of a request. A folder of links to the weights with
    ``do_sample: true`` makes ``n`` samples differ (what a vLLM or llama.cpp server does by
    itself)."""
    import json

    src, out = Path(model_dir), Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.name != "generation_config.json" and not (out / f.name).exists():
            (out / f.name).symlink_to(f.resolve())
    gen = json.loads((src / "generation_config.json").read_text()) if (src / "generation_config.json").exists() else {}
    gen.update(do_sample=True, temperature=0.8, top_p=0.9)
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2))
    return str(out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ModelServer:
    """``transformers serve MODEL_DIR --port PORT`` in its own process group."""

    def __init__(self, model_dir: str, port: int | None = None) -> None:
        self.model = model_dir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkstemp(prefix="transformers-serve-", suffix=".log")[1])
        self._cache = tempfile.mkdtemp(prefix="hf-cache-")

    def start(self, wait: float = 240.0) -> ModelServer:
        exe = Path(sys.executable).with_name("transformers")
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "HF_HUB_CACHE": self._cache,  # empty: /v1/models lists nothing, the check probes instead
            "TOKENIZERS_PARALLELISM": "false",
        }
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(exe), "serve", self.model, "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited ({self.proc.returncode}): {self.tail()}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"transformers serve did not start within {wait:.0f} s: {self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL the server (a crash, not a shutdown)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s: uvicorn's graceful shutdown waits for requests in
        flight, and a test that cancelled a long generation leaves one (20 s of it on 2 cores)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()


class RateLimitProxy:
    """An HTTP proxy in front of ``upstream`` (``http://host:port``): the first ``refuse``
    chat-completion requests get ``429 Too Many Requests`` with ``Retry-After: retry_after``;
    every other request is forwarded. ``seen`` counts the chat requests that reached it."""

    def __init__(self, upstream: str, refuse: int = 3, retry_after: str = "1") -> None:
        self.upstream = upstream.rstrip("/")
        self.refuse, self.retry_after = refuse, retry_after
        self.seen = 0
        self.refused = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # quiet
                return

            def _forward(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.path.endswith("/chat/completions"):
                    with proxy._lock:
                        proxy.seen += 1
                        limited = proxy.refused < proxy.refuse
                        if limited:
                            proxy.refused += 1
                    if limited:
                        msg = b'{"error": {"message": "rate limited", "type": "rate_limit"}}'
                        self.send_response(429)
                        self.send_header("Retry-After", proxy.retry_after)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(msg)))
                        self.end_headers()
                        self.wfile.write(msg)
                        return
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
                r = httpx.request(method, proxy.upstream + self.path, content=body, headers=headers, timeout=300)
                self.send_response(r.status_code)
                self.send_header("Content-Type", r.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            def do_GET(self) -> None:
                self._forward("GET")

            def do_POST(self) -> None:
                self._forward("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> RateLimitProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
