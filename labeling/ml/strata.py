"""Auto-label only where h earns it (issues 26, 30). No Django.

h is cross-validated on the project's human labels as a whole, but a pool mixes kinds of
candidates: human-written pairs (CAD, imported) that nearly always flip the label, and
generated ones (``rules/insert``, …) that mostly keep it. Pooled, h can beat "nothing flips"
on the human-written pairs and lose to it on the generated ones, and still beat it overall.

So h's out-of-fold predictions are compared with "nothing flips" (``invariant``: y' = y) on the
same labelled pairs per stratum:

- source: ``human-written`` (generator ``human``, e.g. CAD pairs) or ``generated`` (any other);
- generator (within its source);
- control code: ``generator / perturbation``.

**The bound (issue 30).** h labels a stratum only when it beats "nothing flips" there with a
one-sided exact McNemar test on the same pairs at level ``ALPHA``: of the pairs where exactly
one of the two is right, h must be the one right so often that a coin (the two equally good)
would do as well with probability below ``ALPHA``. A tie never passes (its p-value is at least
one half), nor does a small edge on a dozen labels: on 15 labels, 0.533 against 0.533 is held
back, and so is a child stratum that passes only on noise. The first cut (issue 26) labelled
wherever h's accuracy was at least invariant's, so a finer stratum (``rules / insert``) could
pass on noise and label candidates whose generator the report said h held back.

**Which stratum decides.** A candidate is judged by the finest of its strata with at least
``MIN_STRATUM_LABELS`` human labels (code, else generator, else source). Every stratum needs the
bound on its *own* labels, so a stratum whose parent abstains labels only when it passes the test
itself; a stratum that abstains holds its candidates back even where its parent passes. With
fewer labels than that in every stratum of its source, h abstains. Strata never pool across
sources, so CAD pairs that always flip cannot teach generated candidates that everything flips.

**One verdict.** :func:`judge_strata` computes each stratum's verdict once, with its reason and
the finer strata that decide otherwise for their own candidates (``exceptions``); it is stored
with the model, and h's report, the dashboard's risk card and ``autolabel`` all read that stored
list (``deciding_stratum`` for a candidate, :func:`stratum_sentence` for the words).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

MIN_STRATUM_LABELS = 10
# the one-sided level of the McNemar test h must pass in a stratum (and overall)
ALPHA = 0.1
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


def mcnemar_one_sided(wins: int, losses: int) -> float:
    """Exact one-sided McNemar p-value that A beats B: P(X >= wins), X ~ Binomial(wins +
    losses, 1/2); ``wins``: pairs only A got right, ``losses``: only B. 1.0 when they never
    disagree."""
    n = wins + losses
    if n == 0:
        return 1.0
    return float(min(1.0, sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n))


@dataclass(frozen=True)
class Comparison:
    """h against "nothing flips" on the same labelled pairs."""

    n: int
    h_accuracy: float
    invariant_accuracy: float
    wins: int  # pairs only h got right
    losses: int  # pairs only "nothing flips" got right
    p_value: float  # one-sided exact McNemar
    alpha: float

    @property
    def beats(self) -> bool:
        return self.wins > self.losses and self.p_value < self.alpha


def compare(h_correct: Sequence[int], invariant_correct: Sequence[int], *, alpha: float = ALPHA) -> Comparison:
    if len(h_correct) != len(invariant_correct):
        raise ValueError("compare: one entry per labelled pair in both lists")
    n = len(h_correct)
    wins = sum(1 for h, i in zip(h_correct, invariant_correct, strict=True) if h and not i)
    losses = sum(1 for h, i in zip(h_correct, invariant_correct, strict=True) if i and not h)
    acc_h = sum(map(int, h_correct)) / n if n else float("nan")
    acc_i = sum(map(int, invariant_correct)) / n if n else float("nan")
    return Comparison(n, acc_h, acc_i, wins, losses, mcnemar_one_sided(wins, losses), alpha)


def comparison_text(c: Comparison) -> str:
    return (
        f"cross-validated accuracy {c.h_accuracy:.3f} against {c.invariant_accuracy:.3f} on {c.n} human labels; "
        f"h alone right on {c.wins}, “nothing flips” alone on {c.losses}, one-sided McNemar p = {c.p_value:.2f}"
    )


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
    wins: int = 0
    losses: int = 0
    p_value: float = 1.0
    alpha: float = ALPHA
    # finer strata with enough labels whose own verdict differs: they decide their candidates
    exceptions: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.value}"

    @property
    def decides(self) -> bool:
        """Whether its verdict decides candidates: enough labels, or a source (which, with too
        few, holds back the candidates none of its finer strata decide)."""
        return self.enough or self.kind == "source"


def _verdict(kind: str, value: str, h: Sequence[int], inv: Sequence[int], min_n: int, alpha: float) -> Stratum:
    c = compare(h, inv, alpha=alpha)
    what = f"{kind} {value}"
    enough = c.n >= min_n
    if not enough:
        labels = f"{c.n} human label{'' if c.n == 1 else 's'}"
        reason = f"{what}: {labels}, fewer than the {min_n} needed to tell h from “nothing flips”"
    elif c.beats:
        reason = f"{what}: h beats “nothing flips” ({comparison_text(c)} < {alpha})"
    elif c.h_accuracy < c.invariant_accuracy:
        reason = f"{what}: h is worse than “nothing flips” here ({comparison_text(c)})"
    elif c.wins == c.losses:
        reason = f"{what}: h only ties “nothing flips” here ({comparison_text(c)})"
    else:
        reason = f"{what}: h is not surely better than “nothing flips” here ({comparison_text(c)} ≥ {alpha})"
    return Stratum(
        kind,
        value,
        c.n,
        round(c.h_accuracy, 4),
        round(c.invariant_accuracy, 4),
        not (enough and c.beats),
        reason,
        enough,
        c.wins,
        c.losses,
        round(c.p_value, 4),
        alpha,
    )


def judge_strata(
    h_correct: Sequence[int],
    invariant_correct: Sequence[int],
    generators: Sequence[str],
    perturbations: Sequence[str],
    *,
    min_n: int = MIN_STRATUM_LABELS,
    alpha: float = ALPHA,
) -> list[Stratum]:
    """Every stratum of the labelled pairs (source, generator, code) with its verdict, coarsest
    first; the lists are aligned (one entry per human-labelled pair, h's out-of-fold
    correctness). A stratum's ``exceptions`` are its finer strata (with enough labels) whose
    verdict differs from its own."""
    if not (len(h_correct) == len(invariant_correct) == len(generators) == len(perturbations)):
        raise ValueError("judge_strata: the lists must have one entry per labelled pair")
    rows: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    parents: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for hc, ic, g, p in zip(h_correct, invariant_correct, generators, perturbations, strict=True):
        values = stratum_values(g, p)
        for kind, value in values.items():
            h, i = rows.setdefault((kind, value), ([], []))
            h.append(int(hc))
            i.append(int(ic))
        chain = [(k, values[k]) for k in reversed(KINDS)]  # source, generator, code
        for depth, parent in enumerate(chain):
            parents.setdefault(parent, set()).update(chain[depth + 1 :])
    order = {k: i for i, k in enumerate(KINDS)}
    verdicts = {key: _verdict(*key, *rows[key], min_n=min_n, alpha=alpha) for key in rows}
    out = []
    for key in sorted(rows, key=lambda k: (-order[k[0]], k[1])):
        v = verdicts[key]
        exceptions = sorted(
            verdicts[c].key for c in parents.get(key, ()) if verdicts[c].enough and verdicts[c].abstain != v.abstain
        )
        out.append(Stratum(**{**asdict(v), "exceptions": exceptions}))
    return out


def overall(h_correct: Sequence[int], invariant_correct: Sequence[int], *, alpha: float = ALPHA) -> dict[str, Any]:
    """h against "nothing flips" on all its human labels, pooled (stored with the model as
    ``h_vs_invariant``; the dashboard's pooled check reads it)."""
    c = compare(h_correct, invariant_correct, alpha=alpha)
    return {**asdict(c), "beats": c.beats, "text": comparison_text(c)}


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


def stratum_sentence(s: Mapping[str, Any]) -> str:
    """What h does with a stratum's candidates, in the words h's report, the dashboard and
    ``train_pairwise`` show: its verdict, its reason and the finer strata that decide otherwise."""
    if not s.get("enough", True) and s["kind"] != "source":
        return f"{s['reason']}: its candidates follow the verdict of the next coarser stratum with enough labels"
    what = "h auto-labels" if not s["abstain"] else "h does not auto-label"
    text = f"{what} {s['reason']}"
    exceptions = [str(e).replace(":", " ", 1) for e in s.get("exceptions") or []]
    if exceptions:
        text += f"; except {', '.join(exceptions)}, judged on {'its' if len(exceptions) == 1 else 'their'} own labels"
    return text


def verdict_index(strata: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``Stratum.key`` -> verdict, from the stored list (``asdict`` of each)."""
    return {f"{s['kind']}:{s['value']}": dict(s) for s in strata}


def as_dicts(strata: Sequence[Stratum]) -> list[dict[str, Any]]:
    """The stored form: each verdict with its ``sentence`` (what every page shows)."""
    out = []
    for s in strata:
        d = asdict(s)
        d["decides"] = s.decides
        d["sentence"] = stratum_sentence(d)
        out.append(d)
    return out
