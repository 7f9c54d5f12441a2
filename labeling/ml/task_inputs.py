"""The task model as one of h's inputs (issue 26). No Django.

A trained task model is a Hugging Face sequence-classification folder (model, tokenizer,
``config.id2label`` = the task's labels) with ``counterpart_task_model.json`` metadata beside
it. :func:`load_task` loads it through ``labeling.ml.task_model.load_task_model`` when that
module is there, else through the ``hf`` base classifier (``HFSequenceClassifier``), which
reads any such folder; either way its columns come out in the project's label order.

:func:`task_leak` says whether the task model saw the texts h is cross-validated on. A task
model whose answers on the human-labelled counterfactuals are memorised labels would make h's
cross-validation trust it far more than it deserves on new candidates, so h does not read such
a model (and says why). The metadata's ``text_hashes`` (``textkeys.text_hash`` of every
training record over the task's text fields; ``train_task_model`` writes them) decide; metadata
that lists no hashes but says it trained on a project's own data (a ``project_data`` flag, or ``train_task_model``'s
``training_set`` counts of a project's originals and human-labelled counterfactuals) counts as
having seen all of it. Originals are a different
matter: f sees the same originals at training and at labelling time, so f(x) is the same
memorised answer on both sides; the overlap with originals is reported, not refused.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from labeling.ml.base_classifier import HFSequenceClassifier, Proba
from projects.ml.textkeys import text_hash

META_FILE = "counterpart_task_model.json"


def read_task_meta(path: str) -> dict[str, Any]:
    """The task model's ``counterpart_task_model.json`` ({} when there is none)."""
    f = Path(path) / META_FILE
    if not f.is_file():
        return {}
    try:
        meta = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"task model {path}: unreadable {META_FILE}: {exc}") from None
    return meta if isinstance(meta, dict) else {}


class _Reordered:
    """A task model's probabilities with the columns in the project's label order."""

    def __init__(self, model: Any, order: list[int]) -> None:
        self.model = model
        self.order = order

    def predict_proba(self, records: list[dict[str, str]]) -> Proba:
        p: Proba = np.asarray(self.model.predict_proba(records))[:, self.order]
        return p


def load_task(path: str, labels: Sequence[str], fields: Sequence[str], device: str = "cpu") -> Any:
    """The task model at ``path`` as an object with ``predict_proba(records)`` whose columns are
    ``labels`` in order. ``ValueError`` / ``FileNotFoundError`` say what is wrong."""
    if not Path(path).is_dir():
        raise FileNotFoundError(f"task model directory not found: {path}")
    try:
        loader = importlib.import_module("labeling.ml.task_model").load_task_model
    except (ImportError, AttributeError):
        loader = None
    if loader is None:
        return HFSequenceClassifier(labels, fields, path, device=device)
    try:  # the trained task model's loader maps its columns to the labels it is given
        model = loader(path, labels=list(labels), fields=list(fields), device=device)
    except TypeError:
        model = loader(path)
    names = [str(v).casefold() for v in (getattr(model, "labels", None) or labels)]
    wanted = [lab.casefold() for lab in labels]
    if sorted(names) != sorted(wanted):
        raise ValueError(f"task model at {path} has labels {', '.join(names)}; the project has {', '.join(labels)}")
    return _Reordered(model, [names.index(lab) for lab in wanted])


@dataclass(frozen=True)
class TaskLeak:
    """What the task model saw of the project (``task_leak``)."""

    labelled_seen: int  # human-labelled counterfactuals among its training texts
    originals_seen: int  # the project's originals among them
    known: bool  # whether the metadata said (text hashes or a project-data flag)

    @property
    def refused(self) -> bool:
        return self.labelled_seen > 0

    def message(self) -> str:
        if self.refused:
            return (
                f"the task model was trained on {self.labelled_seen} of the human-labelled counterfactuals h learns "
                "from: its answers on them are memorised labels, so h's cross-validation cannot judge it, and h "
                "was trained without it. Train the task model on task training data only (without this project's "
                "labels) to let h use it."
            )
        if not self.known:
            return "the task model's metadata lists no training texts: h assumes it never saw this project's pairs"
        if self.originals_seen:
            return (
                f"the task model saw {self.originals_seen} of the project's originals (the same at training and "
                "labelling time, so h reads them as it will on new candidates)"
            )
        return "the task model saw none of this project's texts"


def task_leak(
    meta: dict[str, Any],
    *,
    labelled: Iterable[dict[str, str]],
    originals: Iterable[dict[str, str]],
    fields: Sequence[str],
) -> TaskLeak:
    """How many of the project's human-labelled counterfactuals and originals the task model
    was trained on, from its metadata (module docstring)."""
    labelled_l, originals_l = list(labelled), list(originals)
    hashes = meta.get("text_hashes")
    if isinstance(hashes, list):
        seen = {str(h) for h in hashes}
        return TaskLeak(
            sum(text_hash(r, fields) in seen for r in labelled_l),
            sum(text_hash(r, fields) in seen for r in originals_l),
            True,
        )
    project_data = meta.get("project_data") or meta.get("includes_project_data")
    if project_data:
        return TaskLeak(len(labelled_l), len(originals_l), True)
    # a ``train_task_model`` folder from before it listed its texts records only what it trained on
    # (``training_set``: the counts of a project's labelled originals and human-labelled
    # counterfactuals), not which texts: any counterfactual counts as all of them
    ts = meta.get("training_set")
    if isinstance(ts, dict):
        n_cf, n_orig = int(ts.get("counterfactuals") or 0), int(ts.get("originals") or 0)
        return TaskLeak(len(labelled_l) if n_cf else 0, len(originals_l) if n_orig else 0, True)
    return TaskLeak(0, 0, False)
