"""Reads for generation runs: progress (done/total, rate, ETA) and a project's runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from annotate import roles
from generation import states
from generation.models import Candidate, GenerationRun, Project

FINISHED = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class RunProgress:
    id: int
    status: str
    generator: str
    done: int
    total: int
    skipped: int
    fraction: float  # done / total, 0..1
    percent: int
    rate: float | None  # originals per second since the run started
    eta_seconds: float | None  # None when unknown or finished
    elapsed_seconds: float
    candidates: int
    pooled: int
    filtered_out: int
    cancel_requested: bool
    finished: bool
    error: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_candidate_counts(*, run: GenerationRun) -> dict[str, int]:
    rows = Candidate.objects.filter(generation_run=run).values("state").annotate(n=Count("id"))
    counts = {r["state"]: r["n"] for r in rows}
    return {
        "candidates": sum(counts.values()),
        "pooled": counts.get(states.POOLED, 0),
        "filtered_out": counts.get(states.FILTERED_OUT, 0),
    }


def run_progress(*, run: GenerationRun, now: Any = None) -> RunProgress:
    """Progress of a run. ``rate`` is originals per second over the run's wall time so far
    (the time a killed worker was down counts, so a resumed run's rate is conservative);
    ``eta_seconds`` is what is left at that rate."""
    now = now or timezone.now()
    finished = run.status in FINISHED
    elapsed = 0.0
    if run.started_at:
        end = run.finished_at if (finished and run.finished_at) else now
        elapsed = max(0.0, (end - run.started_at).total_seconds())
    rate = run.done / elapsed if elapsed > 0 and run.done else None
    eta = None
    if not finished and rate:
        eta = max(0.0, (run.total - run.done) / rate)
    fraction = (run.done / run.total) if run.total else (1.0 if finished else 0.0)
    if hasattr(run, "n_candidates"):  # annotated by runs_of_project: no query per run
        counts = {"candidates": run.n_candidates, "pooled": run.n_pooled, "filtered_out": run.n_filtered_out}
    else:
        counts = run_candidate_counts(run=run)
    return RunProgress(
        id=run.pk, status=run.status, generator=run.generator, done=run.done, total=run.total,
        skipped=run.skipped, fraction=round(fraction, 4), percent=int(fraction * 100),
        rate=round(rate, 3) if rate is not None else None, eta_seconds=round(eta, 1) if eta is not None else None,
        elapsed_seconds=round(elapsed, 1), cancel_requested=run.cancel_requested, finished=finished,
        error=run.error, **counts,
    )


def runs_of_project(*, project: Project) -> QuerySet[GenerationRun]:
    """A project's runs, newest first, with their candidate counts (one query)."""
    return (
        GenerationRun.objects.filter(project=project)
        .annotate(
            n_candidates=Count("candidates"),
            n_pooled=Count("candidates", filter=Q(candidates__state=states.POOLED)),
            n_filtered_out=Count("candidates", filter=Q(candidates__state=states.FILTERED_OUT)),
        )
        .order_by("-created_at", "-id")
    )


def run_get(*, run_id: int) -> GenerationRun | None:
    return GenerationRun.objects.select_related("project").filter(pk=run_id).first()


def run_skip_summary(*, run: GenerationRun) -> list[tuple[str, int]]:
    """Skip reasons with their counts (over the stored, capped list), most frequent first."""
    from collections import Counter

    counts = Counter(str(s.get("reason", "")) for s in (run.skips or []) if isinstance(s, dict))
    return counts.most_common()


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:.0f}"
    return str(value)


def run_metrics_rows(*, run: GenerationRun) -> list[tuple[str, str]]:
    """The run's metrics as (name, value) rows for the run page."""
    m = run.metrics or {}
    if not m or "candidates" not in m:
        return []
    rows: list[tuple[str, str]] = [
        ("candidates", _fmt(m.get("candidates"))),
        ("accepted (pooled)", _fmt(m.get("accepted"))),
        ("filtered out", _fmt(m.get("filtered_out"))),
        ("candidates per original", _fmt(m.get("candidates_per_original"))),
        ("accepted per original", _fmt(m.get("accepted_per_original"))),
        ("originals with an accepted candidate", _fmt(m.get("originals_with_accepted"))),
        ("accepted by all filters", _fmt(m.get("accepted_all_filters"))),
    ]
    for name, share in sorted((m.get("acceptance_by_filter") or {}).items()):
        rows.append((f"acceptance by filter: {name}", _fmt(share)))
    every = m.get("all_candidates") or {}
    for key, label in (
        ("distinct_1", "distinct-1"), ("distinct_2", "distinct-2"), ("self_bleu", "self-BLEU"),
        ("mean_token_edit_distance", "mean token edit distance"), ("mean_similarity", "mean similarity"),
        ("introduced_distinct_1", "distinct-1 of introduced tokens"),
        ("introduced_top", "most frequent introduced token"),
        ("introduced_max_share", "share of the most frequent introduced token"),
    ):
        rows.append((f"{label} (accepted / all)", f"{_fmt(m.get(key))} / {_fmt(every.get(key))}"))
    for code, share in sorted((m.get("share_per_code") or {}).items()):
        rows.append((f"share of code {code} (all / accepted)",
                     f"{_fmt(share)} / {_fmt((m.get('accepted_share_per_code') or {}).get(code, 0.0))}"))
    return rows


# -- projects ---------------------------------------------------------------

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
