"""``python manage.py bench_endpoint --base-url URL --model NAME [--concurrency 1,4,8]
[--originals N] [--format cad-sentiment] [--data PATH] [--json]``

``llm-prompt`` through an OpenAI-compatible model server against the same model in this process
(docs/generation-models.md, "Use your own model server"):

* per backend (``in-process``, then ``endpoint`` at each ``--concurrency``): candidates per
  second, the share of originals with a candidate that passed the generator's own artifact
  filters (no teacher, no MiniLM: the same for both), requests, retries and tokens;
* the overhead per request: the median seconds of a one-token chat completion through the
  server against one ``generate`` step of the same chat prompt in this process (both after a
  warm-up), and their difference.

The in-process model is ``--local-path`` (default: the bundled SmolLM2, converted into
``MODEL_DIR``). No response cache is used (every request is paid). No database is touched.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from generation.management.commands.bench_generation import TASK_FOR_FORMAT, load_originals
from generation.ml.base import GeneratedCandidate, Original

GEN_OPTIONS = {"max_spans": 3, "num_return_sequences": 2, "combine": 1}


def _generate(generator: Any, originals: list[Original]) -> dict[str, Any]:
    started = time.monotonic()
    cands = [c for c in generator.generate(originals) if isinstance(c, GeneratedCandidate)]
    seconds = time.monotonic() - started
    with_cand = {c.original_id for c in cands}
    out: dict[str, Any] = {
        "seconds": round(seconds, 2),
        "candidates": len(cands),
        "candidates_per_second": round(len(cands) / seconds, 3) if seconds else None,
        "seconds_per_original": round(seconds / len(originals), 2),
        "originals_with_candidate": round(len(with_cand) / len(originals), 3),
    }
    usage = generator.usage() if callable(getattr(generator, "usage", None)) else None
    if usage:
        out["endpoint"] = usage
    return out


class Command(BaseCommand):
    help = "Benchmark llm-prompt through an OpenAI-compatible model server against the same model in-process."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", dest="base_url", default="", help="default: COUNTERPART_LLM_BASE_URL")
        parser.add_argument("--model", default="", help="default: COUNTERPART_LLM_MODEL")
        parser.add_argument("--local-path", dest="local_path", default="", help="default: the bundled SmolLM2")
        parser.add_argument("--concurrency", default="1,4,8", help="requests in flight, comma-separated")
        parser.add_argument("--originals", type=int, default=6)
        parser.add_argument("--format", default="cad-sentiment")
        parser.add_argument("--data", default="", help="default: SHARED_DATA_DIR/cad")
        parser.add_argument("--split", default="dev")
        parser.add_argument("--requests", type=int, default=10, help="one-token requests for the overhead")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        import logging

        from generation.ml import bundled_lm
        from generation.ml.endpoint import EndpointConfig
        from generation.ml.llm_prompt import LLMPromptGenerator

        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
        cfg = settings.COUNTERPART
        base_url = opts["base_url"] or cfg["LLM_BASE_URL"]
        model = opts["model"] or cfg["LLM_MODEL"]
        if not base_url or not model:
            raise CommandError(
                "give --base-url and --model (or set COUNTERPART_LLM_BASE_URL and COUNTERPART_LLM_MODEL)"
            )
        local = opts["local_path"] or bundled_lm.ensure_converted(cfg["MODEL_DIR"])
        if not local:
            raise CommandError("no local model: give --local-path or install requirements-models.txt")
        fmt = opts["format"]
        path = opts["data"] or str(Path(cfg["SHARED_DATA_DIR"]) / "cad")
        if not os.path.exists(path):
            raise CommandError(f"data not found: {path} (give --data PATH)")
        originals = load_originals(fmt, path, TASK_FOR_FORMAT.get(fmt, "nli"), opts["split"], opts["originals"])
        levels = [int(x) for x in str(opts["concurrency"]).split(",") if x.strip()]
        key = str(getattr(settings, "LLM_API_KEY", "") or "")

        result: dict[str, Any] = {"originals": len(originals), "options": GEN_OPTIONS, "model": model}
        local_gen = LLMPromptGenerator(causal_lm_path=local, **GEN_OPTIONS)  # type: ignore[arg-type]
        result["in_process"] = _generate(local_gen, originals)
        self.stdout.write(f"in-process: {result['in_process']}")
        result["endpoint"] = {}
        for level in levels:
            ep = EndpointConfig(base_url, model, api_key=key, concurrency=level, timeout=600, cache_path="")
            gen = LLMPromptGenerator(endpoint=ep, backend="endpoint", **GEN_OPTIONS)  # type: ignore[arg-type]
            result["endpoint"][str(level)] = _generate(gen, originals)
            self.stdout.write(f"endpoint x{level}: {result['endpoint'][str(level)]}")
        result["overhead"] = self._overhead(local_gen, base_url, model, key, opts["requests"])
        self.stdout.write(f"overhead per request: {result['overhead']}")
        if opts["json"]:
            self.stdout.write(json.dumps(result))

    def _overhead(self, local_gen: Any, base_url: str, model: str, key: str, n: int) -> dict[str, float]:
        """Median seconds of a one-token answer to one chat prompt: through the server, and
        in-process (one forward step of the same templated prompt)."""
        import torch

        from generation.ml.endpoint import ChatRequest, EndpointClient, EndpointConfig

        msgs = (("user", "Fill in the blank so that the review is negative: The film was [blank]."),)
        client = EndpointClient(EndpointConfig(base_url, model, api_key=key, concurrency=1, timeout=600))
        served: list[float] = []
        for i in range(n + 1):
            t = time.monotonic()
            client.complete_many([ChatRequest(messages=msgs, n=1, max_tokens=1, seed=i, temperature=0.0)])
            if i:  # the first is a warm-up
                served.append(time.monotonic() - t)
        lm = local_gen.lm
        tok = lm.tokenizer
        text = tok.apply_chat_template([{"role": r, "content": c} for r, c in msgs], tokenize=False)
        local: list[float] = []
        for i in range(n + 1):
            t = time.monotonic()
            enc = tok(text, return_tensors="pt")
            with torch.inference_mode():
                lm.model.generate(**enc, max_new_tokens=1, do_sample=False, pad_token_id=tok.eos_token_id)
            if i:
                local.append(time.monotonic() - t)
        s, m = statistics.median(served), statistics.median(local)
        return {"served_s": round(s, 3), "in_process_s": round(m, 3), "overhead_s": round(s - m, 3)}
