"""Reads for generation runs: progress (done/total, rate, ETA) and a project's runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from generation.models import GenerationRun
from projects import states
from projects.models import Candidate, Project
from projects.selectors import job_progress


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
    rate: float | None  # originals per second over the run's batches (projects.job_progress)
    eta_seconds: float | None  # None when unknown or finished
    elapsed_seconds: float
    candidates: int
    pooled: int
    filtered_out: int
    cancel_requested: bool
    finished: bool
    error: str
    stalled: str = ""  # "stalled: no worker has …" (see projects.selectors.JobProgress.stalled)
    waiting_behind: int | None = None  # the job this run waits behind (same project)
    phase: str = ""  # "loading models" or "generating" while the run runs
    phase_message: str = ""  # what it loads, in words
    rate_unit: str = ""  # "originals/s"
    steps: tuple[dict[str, Any], ...] = ()  # every step, loading included, with its state
    summary: str = ""  # the job's figures in one line (as the API and the jobs command)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_candidate_counts(*, run: GenerationRun) -> dict[str, int]:
    rows = Candidate.objects.filter(job_id=run.job_id).values("state").annotate(n=Count("id"))
    counts = {r["state"]: r["n"] for r in rows}
    return {
        "candidates": sum(counts.values()),
        "pooled": counts.get(states.POOLED, 0),
        "filtered_out": counts.get(states.FILTERED_OUT, 0),
    }


# how many batch checkpoints a run keeps in its ``generating`` step (``step["recent"]``): the
# window its rate is measured over (projects.job_progress)
from projects.job_progress import RECENT_BATCHES as RECENT_BATCHES  # noqa: E402


def run_progress(*, run: GenerationRun, now: Any = None) -> RunProgress:
    """Progress of a run: the figures of its job (``projects.job_progress``: the same the API
    and the ``jobs`` command show). While it loads its models, ``phase`` is ``loading models``
    (with ``phase_message``) and there is no rate yet; then ``rate`` is originals/s over this
    execution's batches, filters included, and ``eta_seconds`` what is left at that rate."""
    p = job_progress(job=run.job, now=now)
    finished, elapsed, rate, eta, fraction = p.finished, p.elapsed_seconds, p.rate, p.eta_seconds, p.fraction
    step = run.job.step if isinstance(run.job.step, dict) else {}
    phase = "" if finished else str(step.get("name") or "")
    if hasattr(run, "n_candidates") and hasattr(run, "n_pooled") and hasattr(run, "n_filtered_out"):
        # annotated by runs_of_project: no query per run
        counts = {"candidates": run.n_candidates, "pooled": run.n_pooled, "filtered_out": run.n_filtered_out}
    else:
        counts = run_candidate_counts(run=run)
    return RunProgress(
        id=run.pk,
        status=run.status,
        generator=run.generator,
        done=run.done,
        total=run.total,
        skipped=run.skipped,
        fraction=round(fraction, 4),
        percent=int(fraction * 100),
        rate=rate,
        eta_seconds=eta,
        elapsed_seconds=elapsed,
        cancel_requested=run.cancel_requested,
        finished=finished,
        error=run.error,
        stalled=p.stalled,
        waiting_behind=p.waiting_behind,
        phase=phase,
        phase_message=str(step.get("message") or "") if phase else "",
        rate_unit=p.rate_unit,
        steps=tuple(p.steps),
        summary=p.summary,
        **counts,
    )


def runs_of_project(*, project: Project) -> QuerySet[GenerationRun]:
    """A project's runs, newest first, with their candidate counts (one query)."""
    return (
        GenerationRun.objects.filter(project=project)
        .select_related("job")
        .annotate(
            n_candidates=Count("job__candidates"),
            n_pooled=Count("job__candidates", filter=Q(job__candidates__state=states.POOLED)),
            n_filtered_out=Count("job__candidates", filter=Q(job__candidates__state=states.FILTERED_OUT)),
        )
        .order_by("-job__created_at", "-id")
    )


def run_get(*, run_id: int) -> GenerationRun | None:
    return GenerationRun.objects.select_related("project", "job").filter(pk=run_id).first()


def run_notes(*, run: GenerationRun) -> list[str]:
    """What the generator said about the run as a whole (``metrics["notes"]``): e.g. that no
    diffusion model is configured, so the image-caption pairs are text only."""
    notes = (run.metrics or {}).get("notes") or []
    return [str(n) for n in notes] if isinstance(notes, list) else [str(notes)]


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


def _pct(value: Any) -> str:
    """A share (0–1) as a percentage: 1 -> "100%", 0.4567 -> "45.7%"."""
    if value is None:
        return "–"
    pct = float(value) * 100
    return f"{pct:.1f}".rstrip("0").rstrip(".") + "%"


# Metrics that are shares (0–1) and show as percentages.
_SHARES = {"introduced_max_share"}


def run_metrics_rows(*, run: GenerationRun) -> list[tuple[str, str]]:
    """The run's metrics as (name, value) rows for the run page. Pairs of figures always read
    "accepted / all"; shares show as percentages (never a bare 1)."""
    m = run.metrics or {}
    if not m or "candidates" not in m:
        return endpoint_rows(m.get("endpoint"))  # a run that failed at once still used the server
    rows: list[tuple[str, str]] = [
        ("candidates (accepted / all)", f"{_fmt(m.get('accepted'))} / {_fmt(m.get('candidates'))}"),
        ("filtered out", _fmt(m.get("filtered_out"))),
        (
            "candidates per original (accepted / all)",
            f"{_fmt(m.get('accepted_per_original'))} / {_fmt(m.get('candidates_per_original'))}",
        ),
        ("originals with an accepted candidate", _pct(m.get("originals_with_accepted"))),
        ("accepted by all filters", _pct(m.get("accepted_all_filters"))),
    ]
    if m.get("sample_labels"):
        counts = ", ".join(f"{k} {v}" for k, v in sorted(m["sample_labels"].items()))
        rows.append(("originals sampled (stratified by label, seeded)", counts))
    for name, share in sorted((m.get("acceptance_by_filter") or {}).items()):
        rows.append((f"acceptance by filter: {name}", _pct(share)))
    every = m.get("all_candidates") or {}
    for key, label in (
        ("distinct_1", "distinct-1"),
        ("distinct_2", "distinct-2"),
        ("self_bleu", "self-BLEU"),
        ("mean_token_edit_distance", "mean token edit distance"),
        ("mean_similarity", "mean similarity"),
        ("introduced_distinct_1", "distinct-1 of introduced tokens"),
        ("introduced_top", "most frequent introduced token"),
        ("introduced_max_share", "share of the most frequent introduced token"),
    ):
        fmt = _pct if key in _SHARES else _fmt
        rows.append((f"{label} (accepted / all)", f"{fmt(m.get(key))} / {fmt(every.get(key))}"))
    for code, share in sorted((m.get("share_per_code") or {}).items()):
        accepted = (m.get("accepted_share_per_code") or {}).get(code, 0.0)
        rows.append((f"share of code {code} (accepted / all)", f"{_pct(accepted)} / {_pct(share)}"))
    return rows + endpoint_rows(m.get("endpoint"))


def endpoint_rows(usage: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The model server's usage (``run.metrics["endpoint"]``) as run page rows."""
    if not usage:
        return []
    return [
        ("model server: requests (retries)", f"{_fmt(usage.get('requests'))} ({_fmt(usage.get('retries'))})"),
        ("model server: answers from the cache", _fmt(usage.get("cache_hits"))),
        (
            "model server: tokens (prompt / completion)",
            f"{_fmt(usage.get('prompt_tokens'))} / {_fmt(usage.get('completion_tokens'))}",
        ),
        ("model server: seconds waiting", _fmt(usage.get("seconds"))),
    ]
