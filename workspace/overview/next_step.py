"""The one "next step" of a project's overview, computed from its state (issue 32.1).

Django-free: :func:`next_step` reads a :class:`ProjectState` (gathered by
``workspace.overview.selectors.project_state``) and answers one :class:`NextStep`. The order is
the researcher's journey: import → generate → route → wait for the answers → train f → train h
→ auto-label → send the abstained pairs to people → export. Each step says why it is the next
one; the template turns its ``code`` into a link or a button.
"""

from __future__ import annotations

from dataclasses import dataclass

# Codes, in journey order (the template maps each to its link or button).
IMPORT = "import"
GENERATE = "generate"
ROUTE = "route"
ADD_ANNOTATORS = "add-annotators"
WAIT = "wait"
TRAIN_F = "train-f"
TRAIN_H = "train-h"
AUTOLABEL = "autolabel"
SEND_ABSTAINED = "send-abstained"
EXPORT = "export"
CODES = [IMPORT, GENERATE, ROUTE, ADD_ANNOTATORS, WAIT, TRAIN_F, TRAIN_H, AUTOLABEL, SEND_ABSTAINED, EXPORT]

RETRAIN_SHARE = 0.2  # h is retrained once the human labels grew by this share of what it saw ...
RETRAIN_MIN = 10  # ... and by at least this many


@dataclass(frozen=True)
class ProjectState:
    """What the next step depends on (counts from the stored aggregates)."""

    originals: int = 0
    candidates: int = 0  # every candidate, filtered-out ones included
    pooled: int = 0
    routed: int = 0  # candidates sent to people and not yet labelled by them
    human_labels: int = 0  # human-labelled candidates
    auto_labels: int = 0
    abstained: int = 0
    routed_items: int = 0  # real (not check) items ever made
    answers_wanted: int = 0  # answers the open real items still want
    annotators: int = 0  # annotator members
    k: int = 1  # annotators per item
    sides: int = 1  # items per candidate (2 for image pairs)
    labels_task: bool = True  # the answers are class labels h learns (not caption choices)
    min_labels: int = 10  # h refuses to train on fewer
    task_model: bool = False  # a task model f exists
    task_data: int = 0  # task training examples imported (f can train on them)
    h_trained_on: int | None = None  # human labels the newest h saw (None: no h yet)
    active_job: str = ""  # a running job that changes candidates ("generation", "import", …)


@dataclass(frozen=True)
class NextStep:
    code: str
    title: str
    why: str
    n: int = 0  # the number the step is about (answers to wait for, pairs to send …)
    cost_items: int = 0  # SEND_ABSTAINED: the items it makes, each wanting k answers
    cost_answers: int = 0


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def next_step(s: ProjectState) -> NextStep:
    """The one thing to do next (see the module docstring for the order)."""
    busy = f" (a {s.active_job} job is under way; its result counts once it ends)" if s.active_job else ""
    if s.originals == 0 and s.candidates == 0:
        return NextStep(IMPORT, "Import data", "The project is empty: import originals (or pairs) to start." + busy)
    if s.candidates == 0:
        return NextStep(
            GENERATE,
            "Generate counterfactuals",
            f"{_plural(s.originals, 'original')} and no candidate yet: start a generation run." + busy,
            n=s.originals,
        )
    if s.routed_items == 0 and s.human_labels == 0:
        if s.pooled == 0:
            return NextStep(
                GENERATE,
                "Generate counterfactuals",
                "No candidate is in the pool (every one was filtered out or is labelled): run a generator "
                "or import pairs." + busy,
                n=s.originals,
            )
        return NextStep(
            ROUTE,
            "Route candidates to people",
            f"{_plural(s.pooled, 'candidate')} wait in the pool and nobody has been asked about any: route the "
            "human budget to annotators." + busy,
            n=s.pooled,
        )
    if s.answers_wanted and s.annotators == 0:
        return NextStep(
            ADD_ANNOTATORS,
            "Add annotators",
            f"{_plural(s.answers_wanted, 'answer')} are wanted and the project has no annotator members.",
            n=s.answers_wanted,
        )
    if s.answers_wanted:
        return NextStep(
            WAIT,
            f"Wait for {_plural(s.answers_wanted, 'answer')}",
            f"The routed items still want {_plural(s.answers_wanted, 'answer')} from the project's "
            f"{_plural(s.annotators, 'annotator')} ({s.k} per item); "
            f"{_plural(s.human_labels, 'candidate')} have a human label so far.",
            n=s.answers_wanted,
        )
    if not s.labels_task:
        return NextStep(EXPORT, "Export the labelled set", "Every routed item has its answers." + busy)
    if s.human_labels < s.min_labels:
        if s.pooled == 0:
            return NextStep(
                GENERATE,
                "Generate more candidates",
                f"{_plural(s.human_labels, 'human label')}, fewer than the {s.min_labels} h needs, and the pool is "
                "empty: generate or import more pairs.",
                n=s.human_labels,
            )
        return NextStep(
            ROUTE,
            "Route more candidates to people",
            f"{_plural(s.human_labels, 'human label')}, fewer than the {s.min_labels} h needs, and nothing is "
            "waiting for answers: raise the human budget and route again.",
            n=s.min_labels - s.human_labels,
        )
    if s.h_trained_on is None and not s.task_model and s.task_data:
        return NextStep(
            TRAIN_F,
            "Train the task model f",
            f"{_plural(s.task_data, 'task training example')} are imported and no task model is trained: f's "
            "predictions make h better. (Or train h without it.)",
            n=s.task_data,
        )
    if s.h_trained_on is None:
        return NextStep(
            TRAIN_H,
            "Train h",
            f"{_plural(s.human_labels, 'human label')} are enough to train the pairwise classifier h.",
            n=s.human_labels,
        )
    grown = s.human_labels - s.h_trained_on
    if grown >= max(RETRAIN_MIN, RETRAIN_SHARE * s.h_trained_on):
        return NextStep(
            TRAIN_H,
            "Retrain h",
            f"h saw {_plural(s.h_trained_on, 'human label')}; there are {s.human_labels:,} now ({grown:,} new).",
            n=s.human_labels,
        )
    if s.pooled:
        return NextStep(
            AUTOLABEL,
            f"Auto-label {_plural(s.pooled, 'pooled pair')}",
            f"h is trained; {_plural(s.pooled, 'candidate')} in the pool have no label yet." + busy,
            n=s.pooled,
        )
    if s.abstained:
        items = s.abstained * s.sides
        return NextStep(
            SEND_ABSTAINED,
            f"Send the {_plural(s.abstained, 'abstained pair')} to people",
            f"h abstained on {_plural(s.abstained, 'pair')}: only people can label them. That is "
            f"{_plural(items, 'item')} at k = {s.k}, {_plural(items * s.k, 'answer')}.",
            n=s.abstained,
            cost_items=items,
            cost_answers=items * s.k,
        )
    return NextStep(
        EXPORT,
        "Export the labelled set",
        f"{s.human_labels:,} human and {s.auto_labels:,} auto labels; nothing is waiting." + busy,
        n=s.human_labels + s.auto_labels,
    )
