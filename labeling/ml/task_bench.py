"""The data of ``bench_task_model`` (issue 26): f trained on nli-public plus CAD-NLI **train**
only, scored on CAD-NLI dev originals, CAD-NLI dev revisions and the generated-gold dev set.
No Django (the files are read through :mod:`projects.formats`, which is pure Python).

Every set is ``(records, labels)`` with records ``{"premise": …, "hypothesis": …}``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from projects.formats import OriginalRecord, PairRecord, Problem, read
from projects.ml.textkeys import text_hash

FIELDS = ("premise", "hypothesis")
LABELS = ("entailment", "neutral", "contradiction")
LabelledSet = tuple[list[dict[str, str]], list[str]]


def _records(
    fmt: str, path: str, task: str, split: str = "", problems: list[str] | None = None
) -> Iterator[OriginalRecord | PairRecord]:
    """The records of ``path`` read with the task's labels and text fields: a row that is
    malformed, has a label outside the set or other fields is appended to ``problems`` (as
    ``file:line: what is wrong``) instead of reaching f's training or scoring."""
    labels, fields = (SENTIMENT_LABELS, SENTIMENT_FIELDS) if task == "sentiment" else (LABELS, FIELDS)
    for rec in read(fmt, [path], task=task, split=split, labels=list(labels), text_fields=list(fields)):
        if isinstance(rec, Problem):
            if problems is not None:
                problems.append(str(rec))
            continue
        yield rec


def cad_nli(cad_dir: str, split: str, problems: list[str] | None = None) -> tuple[LabelledSet, LabelledSet]:
    """(originals, human revisions) of one CAD-NLI split."""
    orig: LabelledSet = ([], [])
    revs: LabelledSet = ([], [])
    for rec in _records("cad-nli", cad_dir, "nli", split, problems):
        if isinstance(rec, OriginalRecord) and rec.label:
            orig[0].append({f: rec.fields[f] for f in FIELDS})
            orig[1].append(rec.label)
        elif isinstance(rec, PairRecord) and rec.cf_label:
            revs[0].append({f: rec.cf_fields[f] for f in FIELDS})
            revs[1].append(rec.cf_label)
    return orig, revs


def generated_gold(path: str, problems: list[str] | None = None) -> tuple[LabelledSet, LabelledSet]:
    """(all candidates, valid candidates) of a judged ``pairs-jsonl`` file, each with the edited
    pair's gold label."""
    every: LabelledSet = ([], [])
    valid: LabelledSet = ([], [])
    for rec in _records("pairs-jsonl", path, "nli", problems=problems):
        if isinstance(rec, PairRecord) and rec.cf_label:
            r = {f: rec.cf_fields[f] for f in FIELDS}
            every[0].append(r)
            every[1].append(rec.cf_label)
            if rec.valid:
                valid[0].append(r)
                valid[1].append(rec.cf_label)
    return every, valid


def labelled_jsonl(path: str, max_examples: int = 0, problems: list[str] | None = None) -> LabelledSet:
    """A ``labelled-jsonl`` file of NLI pairs (``{"premise", "hypothesis", "label", …}`` a line)."""
    out: LabelledSet = ([], [])
    for rec in _records("labelled-jsonl", path, "nli", problems=problems):
        if isinstance(rec, OriginalRecord) and rec.label:
            out[0].append({f: rec.fields[f] for f in FIELDS})
            out[1].append(rec.label)
            if max_examples and len(out[1]) >= max_examples:
                break
    return out


def concat(*sets: LabelledSet) -> LabelledSet:
    recs: list[dict[str, str]] = []
    ys: list[str] = []
    for r, y in sets:
        recs.extend(r)
        ys.extend(y)
    return recs, ys


def bench_sets(
    shared_data: str, *, max_public: int = 0, problems: list[str] | None = None
) -> tuple[LabelledSet, dict[str, LabelledSet]]:
    """(training set, evaluation sets) from the shared data folder (``../shared/data``); the
    rows skipped are appended to ``problems``."""
    cad = os.path.join(shared_data, "cad")
    train_orig, train_revs = cad_nli(cad, "train", problems)
    dev_orig, dev_revs = cad_nli(cad, "dev", problems)
    public = labelled_jsonl(os.path.join(shared_data, "nli-public", "train.jsonl"), max_public, problems)
    gold_path = os.path.join(shared_data, "generated-gold", "cad-nli-dev-rules.jsonl")
    gold_all, gold_valid = generated_gold(gold_path, problems)
    evals = {
        "cad_dev_originals": dev_orig,
        "cad_dev_revisions": dev_revs,
        "gold_rules_all": gold_all,
        "gold_rules_valid": gold_valid,
    }
    return concat(public, train_orig, train_revs), evals


SENTIMENT_FIELDS = ("text",)
SENTIMENT_LABELS = ("negative", "positive")


def cad_sentiment(cad_dir: str, split: str, problems: list[str] | None = None) -> tuple[LabelledSet, LabelledSet]:
    """(originals, human revisions) of one CAD sentiment split (issue 31)."""
    orig: LabelledSet = ([], [])
    revs: LabelledSet = ([], [])
    for rec in _records("cad-sentiment", os.path.join(cad_dir, "sentiment"), "sentiment", split, problems):
        if isinstance(rec, PairRecord):
            if rec.original.label:
                orig[0].append({"text": rec.original.fields["text"]})
                orig[1].append(rec.original.label)
            if rec.cf_label:
                revs[0].append({"text": rec.cf_fields["text"]})
                revs[1].append(rec.cf_label)
    return orig, revs


def sentiment_bench_sets(
    shared_data: str, *, max_public: int = 0, problems: list[str] | None = None
) -> tuple[LabelledSet, dict[str, LabelledSet]]:
    """(training set, evaluation sets) for the sentiment task model (issue 31): sentiment-public
    ``train.jsonl`` plus CAD sentiment **train** originals and revisions; scored on CAD sentiment
    dev originals and dev revisions."""
    cad = os.path.join(shared_data, "cad")
    train_orig, train_revs = cad_sentiment(cad, "train", problems)
    dev_orig, dev_revs = cad_sentiment(cad, "dev", problems)
    public: LabelledSet = ([], [])
    public_path = os.path.join(shared_data, "sentiment-public", "train.jsonl")
    for rec in _records("labelled-jsonl", public_path, "sentiment", problems=problems):
        if isinstance(rec, OriginalRecord) and rec.label:
            public[0].append({"text": rec.fields["text"]})
            public[1].append(rec.label)
            if max_public and len(public[1]) >= max_public:
                break
    return concat(public, train_orig, train_revs), {"cad_dev_originals": dev_orig, "cad_dev_revisions": dev_revs}


def sizes(sets: dict[str, LabelledSet]) -> dict[str, int]:
    return {k: len(v[1]) for k, v in sets.items()}


def without_training(
    evals: dict[str, LabelledSet], training: list[dict[str, str]], fields: Sequence[str]
) -> tuple[dict[str, LabelledSet], dict[str, int]]:
    """Each evaluation set less the examples whose text (``text_hash``) f trains on, and how
    many each lost: a held-out figure must not score f on its own training data (a data folder
    whose dev files repeat training rows, or held-out files that overlap the public sets)."""
    seen = {text_hash(r, fields) for r in training}
    kept: dict[str, LabelledSet] = {}
    excluded: dict[str, int] = {}
    for name, (recs, ys) in evals.items():
        keep = [i for i, r in enumerate(recs) if text_hash(r, fields) not in seen]
        kept[name] = ([recs[i] for i in keep], [ys[i] for i in keep])
        excluded[name] = len(recs) - len(keep)
    return kept, excluded
