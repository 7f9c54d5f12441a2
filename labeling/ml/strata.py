"""Auto-label only where h earns it (issue 26). No Django.

h is cross-validated on the project's human labels as a whole, but a pool mixes kinds of
candidates: human-written pairs (CAD, imported) that nearly always flip the label, and
generated ones (``rules/insert``, …) that mostly keep it. Pooled, h can beat "nothing flips"
on the human-written pairs and lose to it on the generated ones, and still beat it overall.

So h's out-of-fold predictions are compared with "nothing flips" (``invariant``: y' = y) on the
same labelled pairs per stratum:

- source: ``human-written`` (generator ``human``, e.g. CAD pairs) or ``generated`` (any other);
- generator (within its source);
- control code: ``generator / perturbation``.

A candidate is judged by the finest of its strata with at least ``MIN_STRATUM_LABELS`` human
labels (code, else generator, else source). h labels it only when, on that stratum, its
out-of-fold accuracy is at least that of "nothing flips" on the same pairs; otherwise — or
when even its source has fewer labels than that — h abstains and the candidate stays for
humans. Each stratum's verdict carries its reason. The minimum of 10 labels is the small-sample
rule: with fewer, one pair moves the accuracy by more than 0.1 and the comparison is noise. A
tie keeps h (where h agrees with "nothing flips" it labels as it would; its confidence
threshold still applies). Strata never pool across sources, so CAD pairs that always flip
cannot teach generated candidates that everything flips: the generated ones are judged on
their own labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

MIN_STRATUM_LABELS = 10
HUMAN_WRITTEN = "human-written"
GENERATED = "generated"
KINDS = ("code", "generator", "source")  # finest first


def source_of(generator: str) -> str:
    """``human-written`` for the ``human`` generator (CAD pairs and other human-written
    counterfactuals), ``generated`` for every other (a generator, or an import naming none)."""
    return HUMAN_WRITTEN if (generator or "").strip().casefold() == "human" else GENERATED


def stratum_values(generator: str, perturbation: str) -> dict[str, str]:
    """A candidate's strata, by kind (generators and codes keyed within their source)."""
    g = generator or "(none)"
    return {
        "source": source_of(generator),
        "generator": g,
        "code": f"{g} / {perturbation or '(none)'}",
    }


@dataclass(frozen=True)
class Stratum:
    kind: str  # source | generator | code
    value: str
    n: int  # human labels in it
    h_accuracy: float
    invariant_accuracy: float
    abstain: bool
    reason: str
    enough: bool = True  # at least the minimum of human labels (else it decides no candidate)

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.value}"


def _verdict(kind: str, value: str, h: Sequence[int], inv: Sequence[int], min_n: int) -> Stratum:
    n = len(h)
    acc_h, acc_i = sum(h) / n, sum(inv) / n
    what = f"{kind} {value}"
    enough = n >= min_n
    if not enough:
        reason = f"{what}: {n} human labels, fewer than the {min_n} needed to tell h from “nothing flips”"
    elif acc_h < acc_i:
        reason = (
            f"{what}: h is worse than “nothing flips” here (cross-validated accuracy {acc_h:.3f} against "
            f"{acc_i:.3f} on {n} human labels)"
        )
    else:
        reason = f"{what}: h {acc_h:.3f} against “nothing flips” {acc_i:.3f} on {n} human labels"
    abstain = not enough or acc_h < acc_i
    return Stratum(kind, value, n, round(acc_h, 4), round(acc_i, 4), abstain, reason, enough)


def judge_strata(
    h_correct: Sequence[int],
    invariant_correct: Sequence[int],
    generators: Sequence[str],
    perturbations: Sequence[str],
    *,
    min_n: int = MIN_STRATUM_LABELS,
) -> list[Stratum]:
    """Every stratum of the labelled pairs (source, generator, code) with its verdict; the
    lists are aligned (one entry per human-labelled pair, h's out-of-fold correctness)."""
    if not (len(h_correct) == len(invariant_correct) == len(generators) == len(perturbations)):
        raise ValueError("judge_strata: the lists must have one entry per labelled pair")
    rows: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    for hc, ic, g, p in zip(h_correct, invariant_correct, generators, perturbations, strict=True):
        for kind, value in stratum_values(g, p).items():
            h, i = rows.setdefault((kind, value), ([], []))
            h.append(int(hc))
            i.append(int(ic))
    order = {k: i for i, k in enumerate(KINDS)}
    return [
        _verdict(kind, value, h, i, min_n)
        for (kind, value), (h, i) in sorted(rows.items(), key=lambda kv: (-order[kv[0][0]], kv[0][1]))
    ]


def deciding_stratum(verdicts: Mapping[str, Mapping[str, Any]], generator: str, perturbation: str) -> dict[str, Any]:
    """The verdict that decides a candidate (``verdicts``: ``Stratum.key`` -> ``asdict``): the
    finest of its strata with enough labels, else its source's (which then abstains), else —
    no human label in its source at all — an abstaining verdict saying so."""
    values = stratum_values(generator, perturbation)
    for kind in KINDS:
        v = verdicts.get(f"{kind}:{values[kind]}")
        if v is not None and v.get("enough", True):
            return dict(v)
    source = verdicts.get(f"source:{values['source']}")
    if source is not None:
        return dict(source)
    return {
        "kind": "source",
        "value": values["source"],
        "n": 0,
        "abstain": True,
        "reason": f"source {values['source']}: no human label on such candidates, so h's accuracy there is unmeasured",
    }


def verdict_index(strata: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``Stratum.key`` -> verdict, from the stored list (``asdict`` of each)."""
    return {f"{s['kind']}:{s['value']}": dict(s) for s in strata}


def as_dicts(strata: Sequence[Stratum]) -> list[dict[str, Any]]:
    return [asdict(s) for s in strata]
