"""The validity discriminator fine-tuned as a cross-encoder (issue 19): a measurement, not the
shipped filter (which keeps MiniLM frozen: docs/generation.md, "Validity filter"). Two steps,
from the repository root:

    # 1. on any machine with the app's venv (WordNet in NLTK_DATA): the texts, as JSON
    python experiments/validity_finetune.py prep --data ../shared/data/cad \
        --judged ../shared/data/generated-gold/cad-nli-dev-rules.jsonl --out .gpu/valid_data.json
    # 2. on a machine with torch + transformers (a GPU: seconds per run; no Django, no app code)
    python experiments/validity_finetune.py train --data-file .gpu/valid_data.json --model PATH_TO_MINILM

Step 1 builds the training pairs exactly as ``train_validity`` does (CAD-NLI train's human edits
and safe swaps as valid, synthetic rule-failure corruptions as invalid; "small" = the shipped
filter's 600/150/750, "large" = 4,000/1,000/5,000), the 400 held-out train edits that set the
threshold, CAD-NLI dev's first 300 human edits, and the 340 judged rows; all as the edited
windows the filter reads. Step 2 fine-tunes MiniLM with a classification head per
configuration and prints one JSON line each: AUC for "invalid", and at the threshold that passes
90 % of the held-out human edits the share of invalid rows removed, of valid rows kept and of
CAD-NLI dev edits passed. docs/generation.md has the H100 figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any

import numpy as np


def prep(args: argparse.Namespace) -> None:
    sys.path.insert(0, os.getcwd())
    from generation.ml import validity as V
    from generation.services import validity_bench as B

    train_edits, held = B.train_and_held_out(args.data, 0)
    out: dict[str, Any] = {}
    for name, (nh, ns, ni) in {"small": (600, 150, 750), "large": (4000, 1000, 5000)}.items():
        d = V.training_pairs(train_edits, n_human=nh, n_safe=ns, n_invalid=ni, seed=0)
        rows = zip(d.originals, d.edited, d.valid, d.kinds, strict=True)
        out[name] = [[*V.pair_text(a, b), y, k] for a, b, y, k in rows]
    out["held"] = [list(V.pair_text(a, b)) for a, b in held[: B.CALIBRATION_EDITS]]
    dev = [(a, b) for _, a, b in B.cad_edits(args.data, "dev")][: B.DEV_EDITS]
    out["dev_human"] = [list(V.pair_text(a, b)) for a, b in dev]
    out["judged"] = [[*V.pair_text(a, b), v, c] for a, b, v, c in B.judged_rows(args.judged)]
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    print({k: len(v) for k, v in out.items()})


def train(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    with open(args.data_file, encoding="utf-8") as fh:
        D = json.load(fh)
    dev = torch.device(args.device)
    tok = AutoTokenizer.from_pretrained(args.model)

    def auc(pos, neg):  # P(score_pos > score_neg)
        pos = np.asarray(pos)
        neg = np.asarray(neg)
        order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
        ranks = np.empty(len(order))
        ranks[order] = np.arange(1, len(order) + 1)
        return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))

    def score(model, pairs, bs=256, max_len=128):
        model.eval()
        out = []
        with torch.no_grad():
            for i in range(0, len(pairs), bs):
                a = [p[0] for p in pairs[i : i + bs]]
                b = [p[1] for p in pairs[i : i + bs]]
                enc = tok(a, b, truncation=True, max_length=max_len, padding=True, return_tensors="pt").to(dev)
                with torch.autocast(dev.type, dtype=torch.bfloat16):
                    logits = model(**enc).logits.float()
                out.extend(torch.softmax(logits, -1)[:, 1].cpu().tolist())
        return np.array(out)

    def run(data_key, lr, epochs, seed, max_len=128, bs=32):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=2, dtype=torch.float32).to(
            dev
        )
        rows = list(D[data_key])
        random.shuffle(rows)
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        steps = epochs * ((len(rows) + bs - 1) // bs)
        sch = get_linear_schedule_with_warmup(opt, int(0.1 * steps), steps)
        t0 = time.time()
        for _ in range(epochs):
            model.train()
            random.shuffle(rows)
            for i in range(0, len(rows), bs):
                batch = rows[i : i + bs]
                enc = tok(
                    [r[0] for r in batch],
                    [r[1] for r in batch],
                    truncation=True,
                    max_length=max_len,
                    padding=True,
                    return_tensors="pt",
                ).to(dev)
                y = torch.tensor([r[2] for r in batch], device=dev)
                with torch.autocast(dev.type, dtype=torch.bfloat16):
                    loss = torch.nn.functional.cross_entropy(model(**enc).logits.float(), y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sch.step()
                opt.zero_grad()
        held = score(model, D["held"])
        devh = score(model, D["dev_human"])
        j = score(model, [r[:2] for r in D["judged"]])
        valid = np.array([bool(r[2]) for r in D["judged"]])
        thr = float(np.quantile(held, 0.10))  # passes 90 % of held-out human edits
        inv_removed = float((j[~valid] < thr).mean())
        valid_kept = float((j[valid] >= thr).mean())
        oracle_thr = float(np.quantile(j[valid], 0.10))
        res = {
            "data": data_key,
            "n_train": len(rows),
            "lr": lr,
            "epochs": epochs,
            "seed": seed,
            "auc_invalid": round(auc(-j[~valid], -j[valid]), 4),
            "threshold": round(thr, 4),
            "invalid_removed": round(inv_removed, 4),
            "valid_kept": round(valid_kept, 4),
            "cad_dev_pass": round(float((devh >= thr).mean()), 4),
            "best_at_90_valid_kept": round(float((j[~valid] < oracle_thr).mean()), 4),
            "train_s": round(time.time() - t0, 1),
        }
        by = {}
        for code in sorted({r[3] for r in D["judged"]}):
            idx = np.array([r[3] == code for r in D["judged"]])
            by[code] = [
                round(float((j[idx & ~valid] < thr).mean()), 2) if (idx & ~valid).any() else None,
                round(float((j[idx & valid] >= thr).mean()), 2) if (idx & valid).any() else None,
            ]
        res["by_code"] = by
        print(json.dumps(res), flush=True)
        return res

    print(torch.__version__, args.device, flush=True)
    results = []
    for data_key, lr, epochs, seed in [
        ("small", 3e-5, 3, 0),
        ("large", 3e-5, 2, 0),
        ("large", 3e-5, 2, 1),
        ("large", 5e-5, 3, 0),
        ("small", 5e-5, 5, 0),
        ("large", 2e-5, 4, 0),
    ]:
        results.append(run(data_key, lr, epochs, seed))
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="step", required=True)
    a = sub.add_parser("prep")
    a.add_argument("--data", required=True, help="the CAD folder")
    a.add_argument("--judged", required=True, help="generated-gold/cad-nli-dev-rules.jsonl")
    a.add_argument("--out", default=".gpu/valid_data.json")
    t = sub.add_parser("train")
    t.add_argument("--data-file", default=".gpu/valid_data.json")
    t.add_argument("--model", required=True, help="all-MiniLM-L6-v2 folder")
    t.add_argument("--device", default="cuda")
    t.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "validity_finetune.json"))
    args = p.parse_args()
    (prep if args.step == "prep" else train)(args)


if __name__ == "__main__":
    main()
