"""The label-efficiency benchmark behind ``manage.py bench_pairwise`` (docs/formats.md §3). No Django.

Setting. The pool is every counterfactual pair read from the data, each with its known
counterfactual label (for CAD: the human-written gold label). Per seed a random ``budget``
fraction of the pool is "given to humans" (their labels are revealed to h); every method then
labels the rest, and accuracy / macro-F1 / ECE are measured on that rest only, then averaged
over seeds.

f, the base classifier, is trained once on the pool's originals with their gold labels (never
on counterfactual labels); with a warm start, on the pool's originals plus the warm-start
data's originals.

Methods: invariant, trust, w-trust, random-pairs and training-only (``baselines.py``), pc, capc,
capc+warm (``--warm-start``: h pre-trained on the warm-start pairs, then adapted by stacking),
capc+active (the humans' pairs chosen by ``active.py`` instead of at random), and the budget
curve of capc at 5 / 10 / 20 / 50 %.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import NotRequired, TypedDict

import numpy as np

from labeling.ml import baselines
from labeling.ml.active import Index, select_active
from labeling.ml.base_classifier import BaseClassifier, CrossFitted, Proba, TooFewLabels, make_base_classifier
from labeling.ml.features import Embed
from labeling.ml.metrics import scores
from labeling.ml.pairs import LabelledPairs, unique_originals
from labeling.ml.pairwise import PairInputs, PairwiseClassifier, prepare_inputs

CURVE = (0.05, 0.1, 0.2, 0.5)


class BenchResult(TypedDict):
    task: str
    n_pairs: int
    budget: float
    seeds: int
    # per method, its scores averaged over the seeds (None: no seed had a number), or
    # {"error": why it could not run}
    methods: dict[str, dict[str, float | None] | dict[str, str]]
    budget_curve: dict[str, dict[str, float | None]]  # {"capc": {budget: mean accuracy}}
    seconds: float
    warm_start_pairs: NotRequired[int]


def _mean(rows: list[dict[str, float]]) -> dict[str, float | None]:
    if not rows:
        return {}
    out: dict[str, float | None] = {}
    for k in rows[0]:
        vals = [r[k] for r in rows if not np.isnan(r[k])]
        out[k] = round(float(np.mean(vals)), 4) if vals else None  # JSON has no NaN
    return out


def run_benchmark(
    data: LabelledPairs,
    *,
    task: str,
    labels: Sequence[str],
    fields: Sequence[str],
    embed: Embed | None,
    budget: float = 0.1,
    seeds: int = 5,
    warm: LabelledPairs | None = None,
    curve: Sequence[float] = CURVE,
    base_kind: str = "minilm",
    threshold: float = 0.7,
    crossfit: bool = True,
    log: Callable[[str], None] | None = None,
) -> BenchResult:
    t0 = time.perf_counter()
    say = log or (lambda _m: None)
    labels, fields = list(labels), list(fields)
    pool, y_prime = data.pairs, data.y_prime
    n = len(pool)
    yi = np.asarray([labels.index(v) for v in y_prime], dtype=int)

    def n_budget(b: float) -> int:
        return max(1, round(b * n))

    # f on the pool's originals (and the warm-start originals for capc+warm)
    originals, orig_y = unique_originals(pool)

    def make_f() -> BaseClassifier:
        return make_base_classifier(base_kind, labels=labels, fields=fields, embed=embed)

    # f as trained on the originals: the trust baselines use it as is; h gets the cross-fitted
    # copies (each pair scored by the copy that did not see its original, see CrossFitted)
    f = make_f().fit(originals, orig_y)
    f_h = CrossFitted(make_f).fit(originals, orig_y) if crossfit else f
    inputs = prepare_inputs(pool, labels=labels, fields=fields, embed=embed, base=f_h)
    both = f.predict_proba([p.original for p in pool] + [p.counterfactual for p in pool])
    f_plain_o, f_plain_c = both[:n], both[n:]
    say(f"pool: {n} pairs, {len(originals)} originals; features ready at {time.perf_counter() - t0:.1f}s")

    warm_h: PairwiseClassifier | None = None
    inputs_w: PairInputs | None = None
    if warm is not None:
        w_orig, w_y = unique_originals(warm.pairs)
        f_w = (CrossFitted(make_f) if crossfit else make_f()).fit(originals + w_orig, orig_y + w_y)
        warm_inputs = prepare_inputs(warm.pairs, labels=labels, fields=fields, embed=embed, base=f_w)
        warm_h = PairwiseClassifier(labels, fields, mode="capc").fit_warm(warm_inputs, warm.y_prime)
        inputs_w = prepare_inputs(pool, labels=labels, fields=fields, embed=embed, base=f_w)
        say(f"warm start: {len(warm.pairs)} pairs; ready at {time.perf_counter() - t0:.1f}s")

    results: dict[str, list[dict[str, float]]] = {}
    errors: dict[str, str] = {}
    curve_rows: dict[str, list[float]] = {str(b): [] for b in curve}

    def record(
        name: str, test: Index, proba: Proba, with_ece: bool = True, h: PairwiseClassifier | None = None
    ) -> None:
        s = scores(yi[test], proba)
        if not with_ece:
            s.pop("ece")
        if h is not None:
            conf = proba.max(1)
            ok = conf >= threshold
            s["coverage"] = float(ok.mean())
            s["accuracy_confident"] = float((proba.argmax(1)[ok] == yi[test][ok]).mean()) if ok.any() else float("nan")
        results.setdefault(name, []).append(s)

    def fit_h(
        mode: str, inp: PairInputs, train: Index, seed: int, warm_model: PairwiseClassifier | None = None
    ) -> PairwiseClassifier:
        h = PairwiseClassifier(labels, fields, mode=mode, seed=seed, threshold=threshold)
        if warm_model is not None:
            h.with_warm(warm_model)
        return h.fit(inp.subset(train), [y_prime[i] for i in train])

    def attempt(name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except TooFewLabels as exc:
            errors[name] = str(exc)

    # a function per seed: the closures below (each run at once) take this seed's split from it
    def run_seed(seed: int) -> None:
        rng = np.random.default_rng(seed)
        perm = rng.permutation(n)
        k = n_budget(budget)
        train, test = np.sort(perm[:k]), np.sort(perm[k:])
        enc_t = inputs.subset(test)

        record("invariant", test, baselines.invariant(enc_t.enc.y, len(labels)), with_ece=False)
        record("trust", test, baselines.trust(f_plain_c[test]))
        record("w-trust", test, baselines.weighted_trust(f_plain_o[test], f_plain_c[test]))

        def run_pc(mode: str, name: str) -> None:
            h = fit_h(mode, inputs, train, seed)
            record(name, test, h.predict_proba(enc_t), h=h)

        attempt("pc", lambda: run_pc("pc", "pc"))
        attempt("capc", lambda: run_pc("capc", "capc"))

        def run_random() -> None:
            shuffled = baselines.random_pairing(pool, rng)
            # the same features as PC except the edit-span embeddings: a random pairing's "edit"
            # is the whole text, and embedding those per seed would dominate the run time
            inp_r = prepare_inputs(shuffled, labels=labels, fields=fields, embed=embed, spans=False)
            h = fit_h("pc", inp_r, train, seed)
            record("random-pairs", test, h.predict_proba(inp_r.subset(test)))

        attempt("random-pairs", run_random)

        def run_training_only() -> None:
            recs = originals + [pool[i].counterfactual for i in train]
            ys = orig_y + [y_prime[i] for i in train]
            f2 = make_base_classifier(base_kind, labels=labels, fields=fields, embed=embed).fit(recs, ys)
            record("training-only", test, f2.predict_proba([pool[i].counterfactual for i in test]))

        attempt("training-only", run_training_only)

        if warm_h is not None and inputs_w is not None:

            def run_warm() -> None:
                assert inputs_w is not None
                h = fit_h("capc", inputs_w, train, seed, warm_model=warm_h)
                record("capc+warm", test, h.predict_proba(inputs_w.subset(test)), h=h)

            attempt("capc+warm", run_warm)

        def run_active() -> None:
            act_inputs = inputs_w if inputs_w is not None else inputs
            warm_proba = None
            if warm_h is not None and inputs_w is not None:
                warm_proba = warm_h.predict_proba(inputs_w)
            feats = np.hstack(
                [act_inputs.enc.emb_c.reshape(n, -1) - act_inputs.enc.emb_o.reshape(n, -1), act_inputs.enc.edits]
            )

            def proba_fn(sel: Index) -> Proba:
                h = fit_h("capc", act_inputs, sel, seed, warm_model=warm_h)
                return h.predict_proba(act_inputs)

            def can_train(sel: Index) -> bool:
                c = np.bincount(yi[sel], minlength=len(labels))
                return len(sel) >= 10 and bool((c >= 2).all())

            chosen = select_active(
                n,
                k,
                features=feats,
                proba_fn=proba_fn,
                rng=np.random.default_rng(1000 + seed),
                warm_proba=warm_proba,
                can_train=can_train,
            )
            rest = np.setdiff1d(np.arange(n), chosen)
            h = fit_h("capc", act_inputs, np.sort(chosen), seed, warm_model=warm_h)
            record("capc+active", rest, h.predict_proba(act_inputs.subset(rest)), h=h)

        attempt("capc+active", run_active)

        for b in curve:

            def run_curve(b: float = b) -> None:
                kb = n_budget(b)
                tr_b, te_b = np.sort(perm[:kb]), np.sort(perm[kb:])
                if abs(b - budget) < 1e-9 and results.get("capc"):
                    curve_rows[str(b)].append(results["capc"][-1]["accuracy"])
                    return
                h = fit_h("capc", inputs, tr_b, seed)
                p = h.predict_proba(inputs.subset(te_b))
                curve_rows[str(b)].append(float((p.argmax(1) == yi[te_b]).mean()))

            attempt(f"curve {b}", run_curve)

    for seed in range(seeds):
        run_seed(seed)
        say(f"seed {seed + 1}/{seeds} done at {time.perf_counter() - t0:.1f}s")

    order = ["invariant", "trust", "w-trust", "random-pairs", "training-only", "pc", "capc", "capc+warm", "capc+active"]
    methods: dict[str, dict[str, float | None] | dict[str, str]] = {}
    for name in order:
        if name in results:
            methods[name] = _mean(results[name])
        elif name in errors:
            methods[name] = {"error": errors[name]}
    out: BenchResult = {
        "task": task,
        "n_pairs": n,
        "budget": budget,
        "seeds": seeds,
        "methods": methods,
        "budget_curve": {"capc": {k: (round(float(np.mean(v)), 4) if v else None) for k, v in curve_rows.items()}},
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if warm is not None:
        out["warm_start_pairs"] = len(warm.pairs)
    return out
