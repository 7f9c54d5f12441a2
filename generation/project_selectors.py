"""Reads for project pages: the projects a user may see and per-state counts."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from annotate import roles
from generation import states
from generation.models import Candidate, Project


def projects_visible_to(*, user: Any) -> QuerySet[Project]:
    """Admins and researchers see every project; annotators only those they are members of."""
    if roles.is_researcher(user):
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user)


def project_list_with_counts(*, user: Any) -> QuerySet[Project]:
    """Projects with their example/candidate counts in one query (no N+1)."""
    return projects_visible_to(user=user).annotate(
        n_examples=Count("examples", distinct=True),
        n_candidates=Count("candidates", distinct=True),
    )


def project_state_counts(*, project: Project) -> dict[str, int]:
    """Candidates per state, every state present (zeros included), in one query."""
    rows = Candidate.objects.filter(project=project).values("state").annotate(n=Count("id"))
    counts = dict.fromkeys(states.STATES, 0)
    for row in rows:
        counts[row["state"]] = row["n"]
    return counts


def project_overview(*, project: Project) -> dict[str, Any]:
    by_state = project_state_counts(project=project)
    sources = Candidate.objects.filter(project=project).aggregate(
        human=Count("id", filter=Q(label_source="human")),
        auto=Count("id", filter=Q(label_source="auto")),
        imported=Count("id", filter=Q(label_source="imported")),
        with_gold=Count("id", filter=Q(gold_label__isnull=False)),
    )
    return {
        "by_state": by_state,
        "total": sum(by_state.values()),
        "n_examples": project.examples.count(),
        "label_sources": sources,
        "labels": list(project.labels.values_list("name", flat=True)),
    }
