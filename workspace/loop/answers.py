"""Routed items answered from the labels file, through the annotation services: each reader
is one annotator who leases the next item (``lease_next``, check items first while qualifying)
and submits its judgement (``annotation_submit``): the label when the reader judged the text
valid, ``unclear`` (the product's "Unclear / invalid") when not. The product aggregates, checks
qualification, and gives candidates their human label or marks them invalid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotate.kinds import UNCLEAR
from annotate.models import Item
from annotate.services.assignments import NotAllowed, annotation_submit, assignment_next
from labeling.evaluation import text_key
from projects.models import Candidate, Project
from workspace.loop.labels import BatchLine, LabelsFile


@dataclass
class AnswerReport:
    submitted: dict[str, int] = field(default_factory=dict)  # per reader
    refused: dict[str, str] = field(default_factory=dict)  # reader -> why the product stopped serving them


def routed_lines(*, project: Project, lf: LabelsFile) -> tuple[list[BatchLine], list[BatchLine]]:
    """The routed candidates (check items included) as batch lines: (every one, those that some
    reader of ``lf`` has not judged — all of them when ``lf`` names no reader)."""
    fields = list(project.text_fields)
    ids = Item.objects.filter(project=project).values_list("candidate_id", flat=True).distinct()
    rows = Candidate.objects.filter(pk__in=list(ids)).order_by("id").values_list("fields", "gold_label__name")
    lines = []
    for f, gold in rows:
        rec = {k: str(f.get(k, "")) for k in fields}
        lines.append(BatchLine(text_key(rec, fields), rec, gold))
    readers = lf.readers
    missing = [line for line in lines if not readers or any(r not in lf.entries.get(line.key, {}) for r in readers)]
    return lines, missing


def answer_routed(*, project: Project, lf: LabelsFile, annotators: dict[str, Any]) -> AnswerReport:
    """Every reader answers every item the product serves them (module docstring)."""
    fields = list(project.text_fields)
    report = AnswerReport()
    for reader, user in annotators.items():
        n = 0
        while True:
            try:
                a = assignment_next(project=project, annotator=user)
            except NotAllowed as exc:
                report.refused[reader] = str(exc)
                break
            if a is None:
                break
            f = a.item.candidate.fields
            j = lf.entries[text_key({k: str(f.get(k, "")) for k in fields}, fields)][reader]
            annotation_submit(assignment_id=a.pk, annotator=user, choice=j.label if j.valid else UNCLEAR)
            n += 1
        report.submitted[reader] = n
    return report
