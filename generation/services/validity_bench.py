"""Training and measuring the validity filter's discriminator (``generation/ml/validity.py``)
from data files: what ``train_validity`` and ``bench_validity`` run. No database.

* Human edits: CAD-NLI's (original sentence, revised sentence) pairs, one per changed field.
  The train split's originals are divided (seeded) into 80 % for training and 20 % held out
  for the threshold; the dev split's first ``DEV_EDITS`` edits give the human pass rate (the
  same 300 that the perplexity measurements used).
* The judged set: ``generated-gold/cad-nli-dev-rules.jsonl`` (``counterfactual.valid``).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from generation.ml import validity as ml_validity
from generation.ml.filters import comparison_texts

DEV_EDITS = 300
CALIBRATION_EDITS = 400
HOLD_OUT = 0.2
N_HUMAN, N_SAFE, N_INVALID = 600, 150, 750


def cad_edits(data_dir: str, split: str) -> list[tuple[str, str, str]]:
    """(original id, original text, revised text) of each field a CAD-NLI revision changed."""
    from projects.formats import read
    from projects.formats.records import PairRecord

    out = []
    for rec in read("cad-nli", [data_dir], task="nli", split=split):
        if not isinstance(rec, PairRecord):
            continue
        for k, before in rec.original.fields.items():
            after = rec.cf_fields.get(k, before)
            if after != before:
                out.append((rec.original.id, str(before), str(after)))
    return out


def train_and_held_out(
    data_dir: str, seed: int = 0, hold_out: float = HOLD_OUT
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """CAD-NLI train edits split by original: (training edits, held-out edits)."""
    edits = cad_edits(data_dir, "train")
    ids = sorted({i for i, _, _ in edits})
    random.Random(seed).shuffle(ids)
    held = set(ids[: int(len(ids) * hold_out)])
    return [(a, b) for i, a, b in edits if i not in held], [(a, b) for i, a, b in edits if i in held]


def judged_rows(path: str, problems: list[str] | None = None) -> list[tuple[str, str, bool, str]]:
    """(original text, candidate text, valid, control code) of a pairs-jsonl file with
    ``counterfactual.valid``; the texts are what the filters compare (the changed field). The
    file is read by ``projects.formats`` (a file that cannot be read at all raises its
    ``FormatError``, a ValueError); a row that cannot be read — not JSON, no counterfactual, a
    ``valid`` that is not a boolean — is left out and appended to ``problems`` as
    ``file:line: what is wrong``."""
    from projects.formats import PairRecord, Problem, read

    out = []
    for rec in read("pairs-jsonl", [path], task="nli"):
        if isinstance(rec, Problem):
            if problems is not None:
                problems.append(str(rec))
            continue
        if not isinstance(rec, PairRecord) or rec.valid is None:
            continue
        a, b = comparison_texts(rec.original.fields, rec.cf_fields)
        out.append((a, b, rec.valid, rec.perturbation or "other"))
    return out


def train(
    *,
    data_dir: str,
    out: str,
    encoder_path: str | None = None,
    seed: int = 0,
    n_human: int = N_HUMAN,
    n_safe: int = N_SAFE,
    n_invalid: int = N_INVALID,
    device: str = "cpu",
) -> ml_validity.ValidityDiscriminator:
    """Train on CAD-NLI train (80 % of its originals), calibrate on the held-out 20 %
    (``CALIBRATION_EDITS`` edits), save to ``out`` with the threshold and how it was made."""
    train_edits, held = train_and_held_out(data_dir, seed)
    data = ml_validity.training_pairs(train_edits, n_human=n_human, n_safe=n_safe, n_invalid=n_invalid, seed=seed)
    disc = ml_validity.ValidityDiscriminator.train(data, encoder_path=encoder_path, device=device)
    held = held[:CALIBRATION_EDITS]
    scores = disc.score([a for a, _ in held], [b for _, b in held])
    disc.threshold = ml_validity.calibrate(list(scores), ml_validity.HUMAN_PASS_RATE)
    kinds: dict[str, int] = defaultdict(int)
    for k in data.kinds:
        kinds[k] += 1
    disc.save(
        out,
        pass_rate=ml_validity.HUMAN_PASS_RATE,
        calibrated_on=f"{len(held)} held-out CAD-NLI train human edits",
        trained_on=dict(sorted(kinds.items())),
        seed=seed,
    )
    return disc


def bench(
    scorer: ml_validity.ValidityDiscriminator, *, data_dir: str, judged_path: str, seed: int = 0
) -> dict[str, Any]:
    """The discriminator's figures on the judged set at its threshold, with the pass rate of
    CAD-NLI dev's first ``DEV_EDITS`` human edits and of the held-out train edits."""
    rows = judged_rows(judged_path)
    scores = scorer.score([a for a, *_ in rows], [b for _, b, *_ in rows])
    dev = [(a, b) for _, a, b in cad_edits(data_dir, "dev")][:DEV_EDITS]
    dev_scores = scorer.score([a for a, _ in dev], [b for _, b in dev])
    held = train_and_held_out(data_dir, seed)[1][:CALIBRATION_EDITS]
    held_scores = scorer.score([a for a, _ in held], [b for _, b in held])
    valid = [v for *_, v, _ in rows]
    fig = ml_validity.figures(list(scores), valid, list(dev_scores), scorer.threshold)
    by_code: dict[str, dict[str, Any]] = {}
    for code in sorted({c for *_, c in rows}):
        idx = [i for i, r in enumerate(rows) if r[3] == code]
        inv = [i for i in idx if not rows[i][2]]
        ok = [i for i in idx if rows[i][2]]
        by_code[code] = {
            "n": len(idx),
            "invalid_removed": _share([scores[i] < scorer.threshold for i in inv]),
            "valid_kept": _share([scores[i] >= scorer.threshold for i in ok]),
        }
    return {
        **asdict(fig),
        "human_edits_dev": len(dev),
        "held_out_pass": _share([s >= scorer.threshold for s in held_scores]),
        "by_code": by_code,
        "judged": judged_path,
        "model": {k: v for k, v in scorer.meta.items() if k != "head"},
    }


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(bool(f) for f in flags) / len(flags), 4) if flags else None
