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

With a task model (``--task-model``, issue 26): ``f alone`` (the task model's probabilities on
x', DISCO's teacher), ``capc+f`` (CAPC's lean features plus the task model's block, no other
candidate) and ``chosen`` (h as the product trains it with the task model: its CV chooses among
invariant, f alone, the y + task-model recipe, pc and capc; its export abstains on the strata
where it did not beat "nothing flips", ``strata.py``). The task model never saw the pool (the
command checks its metadata), so its answers need no cross-fitting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import NotRequired, TypedDict

import numpy as np
from numpy.typing import NDArray

from labeling.ml import baselines
from labeling.ml.active import Index, select_active
from labeling.ml.base_classifier import BaseClassifier, CrossFitted, Proba, TooFewLabels, make_base_classifier
from labeling.ml.calibration import fit_shrinkage, prior_out_of_fold, shrink, transition_prior
from labeling.ml.features import Embed, FeatureConfig, Pair
from labeling.ml.metrics import scores
from labeling.ml.pairs import LabelledPairs, unique_originals
from labeling.ml.pairwise import LEAN, PairInputs, PairwiseClassifier, TaskModel, prepare_inputs
from labeling.ml.siblings import sibling_keys
from labeling.ml.strata import ALPHA as STRATUM_ALPHA
from labeling.ml.strata import deciding_stratum, judge_strata, verdict_index
from labeling.ml.validity import MIN_VALID, ExportShares, ValidityPrior, export_shares

CURVE = (0.05, 0.1, 0.2, 0.5)


class BenchResult(TypedDict):
    task: str
    n_pairs: int
    budget: float
    seeds: int
    # per method, its scores averaged over the seeds (None: no seed had a number), or, when it
    # could not run, {"accuracy": None, "macro_f1": None, "error": why}: the figures' keys stay
    methods: dict[str, dict[str, float | None] | dict[str, str | None]]
    budget_curve: dict[str, dict[str, float | None]]  # {"capc": {budget: mean accuracy}}
    seconds: float
    warm_start_pairs: NotRequired[int]
    warm_start_excluded: NotRequired[int]  # warm-start pairs left out: they share a text with the pool
    # --mixed: how many pairs of the pool flip the label and how many keep it
    mixed: NotRequired[dict[str, int]]
    # the pair file carries counterfactual.valid: what auto-labelling would export with the
    # best method (docs/formats.md §3)
    export: NotRequired[dict[str, str | float | None]]
    valid_share: NotRequired[float]
    # --task-model: each thresholded method's export simulation, and how often h's CV chose
    # each candidate (over the seeds)
    exports: NotRequired[dict[str, dict[str, float | None]]]
    chosen_candidates: NotRequired[dict[str, int]]
    # --min-valid-sweep: each thresholded method's export at each stricter validity threshold
    export_min_valid: NotRequired[dict[str, dict[str, dict[str, float | None]]]]
    # --strata-alpha-sweep: chosen's export with the strata's bound at each other level
    export_strata_alpha: NotRequired[dict[str, dict[str, float | None]]]


def _mean(rows: list[dict[str, float]]) -> dict[str, float | None]:
    if not rows:
        return {}
    out: dict[str, float | None] = {}
    for k in rows[0]:
        vals = [r[k] for r in rows if not np.isnan(r[k])]
        out[k] = round(float(np.mean(vals)), 4) if vals else None  # JSON has no NaN
    return out


def n_budget(n: int, budget: float) -> int:
    """How many of ``n`` pairs a budget fraction gives to humans (at least one)."""
    return max(1, round(budget * n))


def human_split(n: int, budget: float, rng: np.random.Generator) -> tuple[Index, Index, Index]:
    """One seed's split of the pool: (the humans' rows, the rest, the permutation drawn).
    ``rng`` is ``default_rng(seed)``; it draws the permutation and nothing else, so a caller
    may go on drawing from it (bench_pairwise's random pairing does)."""
    perm = rng.permutation(n)
    k = n_budget(n, budget)
    return np.sort(perm[:k]), np.sort(perm[k:]), perm


@dataclass(frozen=True)
class PoolSetup:
    """What every seed shares: f trained on the pool's originals, h's inputs (f(x), f(x')
    from the cross-fitted copies), and plain f's probabilities on x and x' (trust baselines)."""

    originals: list[dict[str, str]]
    orig_y: list[str]
    f: BaseClassifier
    inputs: PairInputs
    f_o: Proba
    f_c: Proba


def pool_setup(
    pool: Sequence[Pair],
    *,
    labels: Sequence[str],
    fields: Sequence[str],
    embed: Embed | None,
    base_kind: str = "minilm",
    crossfit: bool = True,
) -> PoolSetup:
    labels, fields = list(labels), list(fields)
    originals, orig_y = unique_originals(pool)

    def make_f() -> BaseClassifier:
        return make_base_classifier(base_kind, labels=labels, fields=fields, embed=embed)

    # f as trained on the originals: the trust baselines use it as is; h gets the cross-fitted
    # copies (each pair scored by the copy that did not see its original, see CrossFitted)
    f = make_f().fit(originals, orig_y)
    f_h = CrossFitted(make_f).fit(originals, orig_y) if crossfit else f
    inputs = prepare_inputs(pool, labels=labels, fields=fields, embed=embed, base=f_h)
    n = len(pool)
    both = f.predict_proba([p.original for p in pool] + [p.counterfactual for p in pool])
    return PoolSetup(originals, orig_y, f, inputs, both[:n], both[n:])


def warm_setup(
    pool: Sequence[Pair],
    warm: LabelledPairs,
    setup: PoolSetup,
    *,
    labels: Sequence[str],
    fields: Sequence[str],
    embed: Embed | None,
    base_kind: str = "minilm",
    crossfit: bool = True,
) -> tuple[PairwiseClassifier, PairInputs]:
    """h pre-trained on the warm-start pairs, and the pool's inputs with the f that also saw
    the warm-start originals (capc+warm)."""
    labels, fields = list(labels), list(fields)

    def make_f() -> BaseClassifier:
        return make_base_classifier(base_kind, labels=labels, fields=fields, embed=embed)

    w_orig, w_y = unique_originals(warm.pairs)
    recs, ys = setup.originals + w_orig, setup.orig_y + w_y
    f_w = CrossFitted(make_f).fit(recs, ys) if crossfit else make_f().fit(recs, ys)
    warm_inputs = prepare_inputs(warm.pairs, labels=labels, fields=fields, embed=embed, base=f_w)
    warm_h = PairwiseClassifier(labels, fields, mode="capc").fit_warm(warm_inputs, warm.y_prime)
    return warm_h, prepare_inputs(pool, labels=labels, fields=fields, embed=embed, base=f_w)


def fit_h(
    mode: str,
    inputs: PairInputs,
    train: Index,
    y_prime: Sequence[str],
    *,
    labels: Sequence[str],
    fields: Sequence[str],
    seed: int,
    threshold: float,
    warm_model: PairwiseClassifier | None = None,
    keys: Sequence[str] | None = None,
    configs: tuple[FeatureConfig, ...] | None = None,
) -> PairwiseClassifier:
    """h (``pc`` or ``capc``) trained on the pool rows ``train`` with their labels; with
    ``keys`` (the pool's ``sibling_keys``) its sibling stage too, as the product trains it;
    ``configs``: only these feature sets (no other candidate, not even "nothing flips")."""
    h = PairwiseClassifier(list(labels), list(fields), mode=mode, seed=seed, threshold=threshold)
    if configs is not None:
        h.configs, h.config, h.invariant_candidate = configs, configs[0], False
    if warm_model is not None:
        h.with_warm(warm_model)
    ys = [y_prime[i] for i in train]
    h.fit(inputs.subset(train), ys)
    if keys is not None:
        h.fit_siblings(inputs, keys, train, ys)
    return h


def pool_proba(
    h: PairwiseClassifier, inputs: PairInputs, keys: Sequence[str], train: Index, y_prime: Sequence[str]
) -> Proba:
    """h's probabilities on every pool row, the humans' labels of ``train`` known to its
    sibling stage (index the rows to score)."""
    return h.predict_proba_pool(inputs, keys, {int(i): y_prime[i] for i in train})


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
    split_flips: bool = False,
    siblings: bool = True,
    task_model: TaskModel | None = None,
    skip: Sequence[str] = (),
    min_valid_sweep: Sequence[float] = (),
    alpha_sweep: Sequence[float] = (),
) -> BenchResult:
    """``skip``: methods not to run (e.g. the slow ``random-pairs``, ``training-only``,
    ``capc+active`` and ``curve``)."""
    t0 = time.perf_counter()
    say = log or (lambda _m: None)
    labels, fields = list(labels), list(fields)
    curve = () if "curve" in skip else curve
    pool, y_prime = data.pairs, data.y_prime
    n = len(pool)
    yi = np.asarray([labels.index(v) for v in y_prime], dtype=int)
    # split_flips (a mixed pool): each method's accuracy on the pairs whose label flips and on
    # those whose label stays, reported beside the overall figures
    flips = np.asarray([p.y != v for p, v in zip(pool, y_prime, strict=True)], dtype=bool)
    # h's sibling stage (siblings.py), as the product trains it; off: the first stage alone
    keys = sibling_keys(pool, fields) if siblings else None
    # counterfactual.valid (None counts as valid): accuracy on the valid candidates and the
    # export simulation; the humans' "invalid" answers teach the validity prior
    has_valid = data.has_valid
    valid = np.asarray([v is not False for v in data.valid], dtype=bool) if has_valid else np.ones(n, bool)
    codes = [p.perturbation for p in pool]
    exports: dict[str, list[dict[str, float]]] = {}
    # the export at stricter validity thresholds (issue 30's validity lever): method -> min_valid -> seeds
    valid_sweep: dict[str, dict[str, list[dict[str, float]]]] = {}
    alpha_rows: dict[str, list[dict[str, float]]] = {}  # chosen's export at other strata levels

    # f on the pool's originals (and the warm-start originals for capc+warm)
    setup = pool_setup(pool, labels=labels, fields=fields, embed=embed, base_kind=base_kind, crossfit=crossfit)
    originals, orig_y, inputs = setup.originals, setup.orig_y, setup.inputs
    f_plain_o, f_plain_c = setup.f_o, setup.f_c
    say(f"pool: {n} pairs, {len(originals)} originals; features ready at {time.perf_counter() - t0:.1f}s")

    warm_h: PairwiseClassifier | None = None
    inputs_w: PairInputs | None = None
    if warm is not None:
        warm_h, inputs_w = warm_setup(
            pool, warm, setup, labels=labels, fields=fields, embed=embed, base_kind=base_kind, crossfit=crossfit
        )
        say(f"warm start: {len(warm.pairs)} pairs; ready at {time.perf_counter() - t0:.1f}s")

    inputs_t: PairInputs | None = None
    if task_model is not None:
        inputs_t = inputs.with_task(task_model, pool)
        say(f"task model: probabilities ready at {time.perf_counter() - t0:.1f}s")
    chosen_names: dict[str, int] = {}

    results: dict[str, list[dict[str, float]]] = {}
    errors: dict[str, str] = {}
    curve_rows: dict[str, list[float]] = {str(b): [] for b in curve}

    def export_of(
        test: Index, proba: Proba, abstain: NDArray[np.bool_] | None, min_valid: float = MIN_VALID
    ) -> ExportShares:
        """The export simulation for h's probabilities on ``test`` (``abstain``: rows it leaves
        to humans), the validity prior learnt from the humans' judgements."""
        human = np.setdiff1d(np.arange(n), test)
        prior = ValidityPrior().fit([codes[i] for i in human], valid[human].tolist())
        return export_shares(
            y_true=yi,
            valid=valid,
            human=human,
            rest=test,
            proba=proba if abstain is None else np.where(abstain[:, None], 0.0, proba),
            threshold=threshold,
            p_valid=prior.predict([codes[i] for i in test]),
            min_valid=min_valid,
        )

    def record(
        name: str,
        test: Index,
        proba: Proba,
        with_ece: bool = True,
        h: PairwiseClassifier | None = None,
        thresholded: bool = False,
        abstain: NDArray[np.bool_] | None = None,
    ) -> None:
        """``thresholded``: coverage and export figures as for an h; ``abstain``: rows of
        ``test`` it leaves to humans whatever its confidence (its strata)."""
        s = scores(yi[test], proba)
        if not with_ece:
            s.pop("ece")
        if split_flips:
            pred, fl = proba.argmax(1), flips[test]
            for key, m in (("accuracy_flips", fl), ("accuracy_non_flips", ~fl)):
                s[key] = float((pred[m] == yi[test][m]).mean()) if m.any() else float("nan")
        if has_valid:
            v = valid[test]
            s["accuracy_valid"] = float((proba.argmax(1)[v] == yi[test][v]).mean()) if v.any() else float("nan")
        if h is not None or thresholded:
            conf = proba.max(1)
            ok = conf >= threshold
            if abstain is not None:
                ok &= ~abstain
            s["coverage"] = float(ok.mean())
            s["accuracy_confident"] = float((proba.argmax(1)[ok] == yi[test][ok]).mean()) if ok.any() else float("nan")
            if has_valid:
                e = export_of(test, proba, abstain)
                exports.setdefault(name, []).append(asdict(e))
                for mv in min_valid_sweep:
                    valid_sweep.setdefault(name, {}).setdefault(str(mv), []).append(
                        asdict(export_of(test, proba, abstain, mv))
                    )
        results.setdefault(name, []).append(s)

    def fit_h_(
        mode: str, inp: PairInputs, train: Index, seed: int, warm_model: PairwiseClassifier | None = None
    ) -> PairwiseClassifier:
        return fit_h(
            mode,
            inp,
            train,
            y_prime,
            labels=labels,
            fields=fields,
            seed=seed,
            threshold=threshold,
            warm_model=warm_model,
            keys=keys,
        )

    def proba(h: PairwiseClassifier, inp: PairInputs, train: Index, rows: Index) -> Proba:
        """h's probabilities on ``rows``, the labels of ``train`` known to its sibling stage."""
        if keys is None:
            return h.predict_proba(inp.subset(rows))
        return pool_proba(h, inp, keys, train, y_prime)[rows]

    def attempt(name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except TooFewLabels as exc:
            errors[name] = str(exc)

    # a function per seed: the closures below (each run at once) take this seed's split from it
    def run_seed(seed: int) -> None:
        rng = np.random.default_rng(seed)
        train, test, perm = human_split(n, budget, rng)
        k = len(train)
        enc_t = inputs.subset(test)

        record("invariant", test, baselines.invariant(enc_t.enc.y, len(labels)), with_ece=False)
        record("trust", test, baselines.trust(f_plain_c[test]))
        record("w-trust", test, baselines.weighted_trust(f_plain_o[test], f_plain_c[test]))

        def run_pc(mode: str, name: str) -> None:
            h = fit_h_(mode, inputs, train, seed)
            record(name, test, proba(h, inputs, train, test), h=h)

        attempt("pc", lambda: run_pc("pc", "pc"))
        attempt("capc", lambda: run_pc("capc", "capc"))

        def run_random() -> None:
            shuffled = baselines.random_pairing(pool, rng)
            # the same features as PC except the edit-span embeddings: a random pairing's "edit"
            # is the whole text, and embedding those per seed would dominate the run time
            inp_r = prepare_inputs(shuffled, labels=labels, fields=fields, embed=embed, spans=False)
            h = fit_h(
                "pc", inp_r, train, y_prime, labels=labels, fields=fields, seed=seed, threshold=threshold
            )  # a random pairing has no siblings
            record("random-pairs", test, h.predict_proba(inp_r.subset(test)))

        if inputs_t is not None:
            assert task_model is not None and inputs_t.t_c is not None
            record("f alone", test, inputs_t.t_c[test], thresholded=True)
            t_inp = inputs_t

            def run_capc_f() -> None:
                h = fit_h(
                    "capc",
                    t_inp,
                    train,
                    y_prime,
                    labels=labels,
                    fields=fields,
                    seed=seed,
                    threshold=threshold,
                    keys=keys,
                    configs=(LEAN,),
                )
                record("capc+f", test, proba(h, t_inp, train, test), h=h)

            def run_chosen() -> None:
                h = fit_h_("capc", t_inp, train, seed)
                chosen_names[h.feature_set_name] = chosen_names.get(h.feature_set_name, 0) + 1
                assert h.cv is not None
                inv_ok = [int(pool[i].y == y_prime[i]) for i in train]
                cv_ok = h.cv.oof_correct

                def held_at(alpha: float) -> NDArray[np.bool_]:
                    strata = judge_strata(
                        cv_ok,
                        inv_ok,
                        [pool[i].generator for i in train],
                        [pool[i].perturbation for i in train],
                        alpha=alpha,
                    )
                    index = verdict_index([vars(v) for v in strata])
                    return np.asarray(
                        [
                            bool(deciding_stratum(index, pool[i].generator, pool[i].perturbation)["abstain"])
                            for i in test
                        ]
                    )

                held = held_at(STRATUM_ALPHA)
                p_test = proba(h, t_inp, train, test)
                record("chosen", test, p_test, h=h, abstain=held)
                if has_valid:  # the export at other levels of the strata's bound
                    for a in alpha_sweep:
                        alpha_rows.setdefault(str(a), []).append(asdict(export_of(test, p_test, held_at(a))))
                # the calibration lever: shrink toward the humans' transition prior (calibration.py)
                stage = h.sibling_stage or h.learner
                if stage is not None and stage.oof_proba is not None:
                    y_o = [labels.index(pool[i].y) for i in train]
                    y_h = [int(yi[i]) for i in train]
                    lam = fit_shrinkage(stage.oof_proba, prior_out_of_fold(y_o, y_h, len(labels)), y_h)
                    prior_m = transition_prior(y_o, y_h, len(labels))
                    p_prior = prior_m[[labels.index(pool[i].y) for i in test]]
                    record("chosen+shrink", test, shrink(p_test, p_prior, lam), h=h, abstain=held)

            attempt("capc+f", run_capc_f)
            attempt("chosen", run_chosen)

        if "random-pairs" not in skip:
            attempt("random-pairs", run_random)

        def run_training_only() -> None:
            recs = originals + [pool[i].counterfactual for i in train]
            ys = orig_y + [y_prime[i] for i in train]
            f2 = make_base_classifier(base_kind, labels=labels, fields=fields, embed=embed).fit(recs, ys)
            record("training-only", test, f2.predict_proba([pool[i].counterfactual for i in test]))

        if "training-only" not in skip:
            attempt("training-only", run_training_only)

        if warm_h is not None and inputs_w is not None:

            def run_warm() -> None:
                assert inputs_w is not None
                h = fit_h_("capc", inputs_w, train, seed, warm_model=warm_h)
                record("capc+warm", test, proba(h, inputs_w, train, test), h=h)

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
                h = fit_h_("capc", act_inputs, sel, seed, warm_model=warm_h)
                return proba(h, act_inputs, sel, np.arange(n))

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
            h = fit_h_("capc", act_inputs, np.sort(chosen), seed, warm_model=warm_h)
            record("capc+active", rest, proba(h, act_inputs, np.sort(chosen), rest), h=h)

        if "capc+active" not in skip:
            attempt("capc+active", run_active)

        for b in curve:

            def run_curve(b: float = b) -> None:
                kb = n_budget(n, b)
                tr_b, te_b = np.sort(perm[:kb]), np.sort(perm[kb:])
                if abs(b - budget) < 1e-9 and results.get("capc"):
                    curve_rows[str(b)].append(results["capc"][-1]["accuracy"])
                    return
                h = fit_h_("capc", inputs, tr_b, seed)
                p = proba(h, inputs, tr_b, te_b)
                curve_rows[str(b)].append(float((p.argmax(1) == yi[te_b]).mean()))

            attempt(f"curve {b}", run_curve)

    for seed in range(seeds):
        run_seed(seed)
        say(f"seed {seed + 1}/{seeds} done at {time.perf_counter() - t0:.1f}s")

    order = [
        "invariant",
        "trust",
        "w-trust",
        "random-pairs",
        "training-only",
        "pc",
        "capc",
        "capc+warm",
        "capc+active",
        "f alone",
        "capc+f",
        "chosen",
        "chosen+shrink",
    ]
    methods: dict[str, dict[str, float | None] | dict[str, str | None]] = {}
    for name in order:
        if name in results:
            methods[name] = _mean(results[name])
        elif name in errors:
            methods[name] = {"accuracy": None, "macro_f1": None, "error": errors[name]}
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
    if split_flips:
        out["mixed"] = {"flips": int(flips.sum()), "non_flips": int((~flips).sum())}
    if has_valid:
        out["valid_share"] = round(float(valid.mean()), 4)
        out["export"] = best_export(methods, exports)
    if task_model is not None:
        out["chosen_candidates"] = dict(sorted(chosen_names.items(), key=lambda kv: -kv[1]))
        if has_valid:
            out["exports"] = {name: _mean(rows) for name, rows in exports.items()}
    if alpha_rows:
        out["export_strata_alpha"] = {a: _mean(rows) for a, rows in alpha_rows.items()}
    if valid_sweep:
        out["export_min_valid"] = {
            name: {mv: _mean(rows) for mv, rows in by.items()} for name, by in valid_sweep.items()
        }
    return out


def best_export(
    methods: dict[str, dict[str, float | None] | dict[str, str | None]], exports: dict[str, list[dict[str, float]]]
) -> dict[str, str | float | None]:
    """The export simulation of the method with an abstain threshold (an h) that has the
    best mean accuracy, its shares averaged over seeds."""

    def acc(name: str) -> float:
        a = methods.get(name, {}).get("accuracy")
        return float(a) if isinstance(a, float | int) else -1.0

    if not exports:
        return {"method": None, "correct": None, "invalid": None, "coverage": None}
    best = max(exports, key=acc)
    mean = _mean(exports[best])
    return {"method": best, "correct": mean["correct"], "invalid": mean["invalid"], "coverage": mean["coverage"]}
