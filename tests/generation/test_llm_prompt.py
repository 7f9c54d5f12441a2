"""llm-prompt: span chunking, the DISCO artifact heuristics, the teacher-shift filter, and the
whole generator over tiny random GPT-2 / T5 models loaded from a local path."""

from __future__ import annotations

import numpy as np
import pytest

from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original, Skip
from generation.ml.llm_prompt import (
    LLMPromptGenerator,
    artifact_reasons,
    build_prompt,
    chunk_spans,
    phrase_chunks,
    pick_spans,
    teacher_shift,
    window_chunks,
)
from tests.generation._tiny_hf import torch_single_thread  # noqa: F401 - autouse fixture

NLI = ("entailment", "neutral", "contradiction")
PREMISE = "A young man is riding a brown horse in the open field."
HYPOTHESIS = "A person is outdoors."


def nli(oid: str = "n1", premise: str = PREMISE, label: str = "entailment") -> Original:
    return Original(id=oid, fields={"premise": premise, "hypothesis": HYPOTHESIS}, label=label, labels=NLI, task="nli")


def test_phrase_chunks_and_windows() -> None:
    chunks = phrase_chunks(PREMISE)
    assert [(c.kind, c.text) for c in chunks] == [
        ("NP", "A young man"),
        ("VP", "is riding"),
        ("NP", "a brown horse"),
        ("NP", "the open field"),
    ]
    for c in chunks:
        assert PREMISE[c.start : c.end] == c.text
    assert pick_spans(chunks, 10) == chunks
    # the VP is preferred over the later NPs; the result keeps text order
    assert [c.text for c in pick_spans(chunks, 2)] == ["A young man", "is riding"]
    assert [c.text for c in pick_spans(chunks, 1)] == ["is riding"]
    wins = window_chunks("one two three four five", 2)
    assert [w.text for w in wins] == ["one two", "three four", "five"]
    assert [c.kind for c in chunk_spans("one two three", mode="window")] == ["window"]


def _reasons(
    fill: str,
    span: str = "a brown horse",
    target: str = "contradiction",
    prompt_words: frozenset[str] = frozenset({"fill", "blank", "hypothesis", "true"}),
    **kw: float,
) -> list[str]:
    new = PREMISE.replace(span, fill)
    prompt = build_prompt("nli", "premise", PREMISE.replace(span, "[blank]"), "hypothesis", HYPOTHESIS, target)
    return artifact_reasons(
        original_fields={"premise": PREMISE, "hypothesis": HYPOTHESIS},
        new_fields={"premise": new, "hypothesis": HYPOTHESIS},
        fill=fill,
        span=span,
        prompt=prompt,
        prompt_words=set(prompt_words),
        target=target,
        **kw,
    )


def test_negation_shortcut_is_matched_as_whole_words() -> None:
    assert "negation_shortcut" in _reasons("not a horse")
    assert "negation_shortcut" in _reasons("nobody")
    assert "negation_shortcut" in _reasons("no horse")
    assert "negation_shortcut" not in _reasons("another horse")  # "no" inside "another"
    assert "negation_shortcut" not in _reasons("a knot")
    assert "negation_shortcut" not in _reasons("a note")
    assert "negation_shortcut" not in _reasons("not a horse", target="neutral")  # only a shortcut to contradiction


def test_artifact_heuristics() -> None:
    assert _reasons("a grey donkey") == []
    assert _reasons("") == ["empty"]
    assert "unchanged" in _reasons("a brown  horse")
    assert "copies_prompt" in _reasons("fill the blank")
    assert "copies_prompt" in _reasons("a true horse")
    assert "copies_prompt" in _reasons("[blank]")
    assert "too_long" in _reasons("a horse that is very very big and also brown and fast and old")
    assert "overlap_premise" in _reasons("a young man in the open field")
    # the introduced words repeat the hypothesis; the threshold is passed through to the shared filter
    assert "overlap_hypothesis" in _reasons("a person is outdoors", hypothesis_jaccard=0.5)
    assert "overlap_hypothesis" not in _reasons("a person is outdoors", hypothesis_jaccard=0.99)
    assert "overlap_hypothesis" not in _reasons("a grey donkey")
    assert "copies_other" in _reasons(HYPOTHESIS.rstrip("."), span=PREMISE.rstrip("."))


def test_teacher_shift() -> None:
    class Teacher:
        labels = NLI

        def predict_proba(self, inputs):
            out = []
            for p, _h in inputs:
                out.append([0.8, 0.1, 0.1] if "dog" in p else [0.2, 0.3, 0.5])
            return np.array(out)

    shifts = teacher_shift(Teacher(), ("a cat", "h"), [("a dog", "h"), ("a cow", "h")], "entailment")
    assert shifts == pytest.approx([0.6, 0.0])
    assert teacher_shift(Teacher(), ("a", "h"), [("b", "h")], "unknown") is None


def test_prompt_names_the_target_label() -> None:
    p = build_prompt("nli", "premise", "A [blank] rides.", "hypothesis", HYPOTHESIS, "contradiction")
    assert "false" in p and "[blank]" in p and HYPOTHESIS in p and p.endswith("Blank:")
    assert "negative" in build_prompt("sentiment", "text", "A [blank] movie.", None, None, "negative")


@pytest.fixture(scope="module")
def gpt2_path(tmp_path_factory):
    from tests.generation._tiny_hf import save_gpt2

    return str(save_gpt2(tmp_path_factory.mktemp("gpt2")))


def test_teacher_filter_keeps_only_big_shifts(gpt2_path, monkeypatch) -> None:
    class Teacher:
        labels = NLI

        def predict_proba(self, inputs):
            return np.array(
                [
                    [0.1, 0.2, 0.7] if "zebra" in p else [0.1, 0.6, 0.3] if "pony" in p else [0.2, 0.5, 0.3]
                    for p, _h in inputs
                ]
            )

    gen = LLMPromptGenerator(causal_lm_path=gpt2_path, teacher=Teacher(), max_spans=1, span_mode="window")
    monkeypatch.setattr(gen, "_fills", lambda *a, **k: ["a striped zebra", "a pony", "not a man"])
    out = list(gen.generate([nli()]))
    cands = [c for c in out if isinstance(c, GeneratedCandidate)]
    # only the zebra premise shifts p(contradiction) by more than 0.25 (0.3 -> 0.7); the pony
    # only shifts neutral by 0.1; "not a man" is a negation shortcut
    assert [(c.target_label, c.fields["premise"]) for c in cands] == [
        ("contradiction", "A striped zebra is riding a brown horse in the open field.")
    ]
    c = cands[0]
    assert c.scores["teacher_shift"] == pytest.approx(0.4)
    assert c.scores["teacher_p_target"] == pytest.approx(0.7)
    assert c.fields["hypothesis"] == HYPOTHESIS and c.meta["span"] == "A young man"

    strict = LLMPromptGenerator(
        causal_lm_path=gpt2_path, teacher=Teacher(), teacher_threshold=0.5, max_spans=1, span_mode="window"
    )
    monkeypatch.setattr(strict, "_fills", lambda *a, **k: ["a striped zebra"])
    out = list(strict.generate([nli()]))
    assert len(out) == 1 and isinstance(out[0], Skip) and "teacher_shift" in out[0].reason


def test_end_to_end_with_tiny_causal_and_seq2seq_models(gpt2_path, tmp_path) -> None:
    from tests.generation._tiny_hf import save_t5

    t5 = str(save_t5(tmp_path / "t5"))
    originals = [
        nli(),
        nli("short", premise="Dogs run."),
        Original(id="nofield", fields={"hypothesis": HYPOTHESIS}, label="neutral", labels=NLI, task="nli"),
    ]
    for kw in ({"causal_lm_path": gpt2_path}, {"seq2seq_path": t5}, {"causal_lm_path": gpt2_path, "decoding": "beam"}):
        gen = LLMPromptGenerator(max_spans=2, num_return_sequences=2, edit_field="premise", **kw)
        out = list(gen.generate(originals))
        by_id: dict[str, list[object]] = {}
        for x in out:
            by_id.setdefault(x.original_id, []).append(x)
        assert set(by_id) == {"n1", "short", "nofield"}
        assert isinstance(by_id["short"][0], Skip) and "too short" in by_id["short"][0].reason
        assert isinstance(by_id["nofield"][0], Skip) and "missing field" in by_id["nofield"][0].reason
        for c in by_id["n1"]:
            if isinstance(c, GeneratedCandidate):
                assert c.target_label in ("neutral", "contradiction")
                assert c.fields["hypothesis"] == HYPOTHESIS
                assert c.fields["premise"] != PREMISE
                assert (
                    not {"not", "no", "never", "nobody"} & set(c.meta["fill"].lower().split())
                    or c.target_label != "contradiction"
                )
            else:
                assert "no candidate survived" in c.reason


def test_misconfiguration_fails_at_construction(tmp_path, gpt2_path) -> None:
    out = list(LLMPromptGenerator(causal_lm_path="", seq2seq_path="").generate([nli(), nli("n2")]))
    assert [type(x) for x in out] == [Skip, Skip] and "no language model configured" in out[0].reason
    with pytest.raises(GeneratorConfigError, match="does not exist"):
        LLMPromptGenerator(causal_lm_path=str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(GeneratorConfigError, match=r"config\.json"):
        LLMPromptGenerator(causal_lm_path=str(tmp_path / "empty"))
    from generation.ml import registry

    built = registry.create(
        "llm-prompt",
        {"max_spans": 1},
        {"causal_lm_path": gpt2_path, "seq2seq_path": "", "teacher_path": "", "device": "cpu"},
    )
    assert isinstance(built, LLMPromptGenerator) and built.teacher is None and built.max_spans == 1
    with pytest.raises(GeneratorConfigError, match="decoding"):
        LLMPromptGenerator(causal_lm_path=gpt2_path, decoding="greedy-ish")
    with pytest.raises(GeneratorConfigError, match="classifier path does not exist"):
        LLMPromptGenerator(causal_lm_path=gpt2_path, teacher_path=str(tmp_path / "teacher"))
    # before: a negative temperature decoded greedily and the run succeeded, saying nothing
    with pytest.raises(GeneratorConfigError, match=r"temperature must be between 0 and 100 \(0: greedy\), got -1"):
        LLMPromptGenerator(causal_lm_path=gpt2_path, temperature=-1)
    with pytest.raises(GeneratorConfigError, match=r"top_p must be above 0 and at most 1, got 1\.5"):
        LLMPromptGenerator(causal_lm_path=gpt2_path, top_p=1.5)
    assert LLMPromptGenerator(causal_lm_path=gpt2_path, temperature="0", top_p="0.5").temperature == 0.0
    # a true/false option given as text is that truth value (QA: {"chat": "false"} left chat on)
    ctx = {"causal_lm_path": gpt2_path, "seq2seq_path": "", "teacher_path": "", "device": "cpu"}
    assert registry.create("llm-prompt", {"chat": "false"}, ctx).chat is False
    assert registry.create("llm-prompt", {"chat": "On"}, ctx).chat is True
    assert registry.create("llm-prompt", {"chat": False}, ctx).chat is False


def test_chat_fills_rest_of_sentence_and_the_window_teacher(gpt2_path, monkeypatch) -> None:
    """In chat form a fill may rewrite the rest of its sentence; the teacher compares the
    sentence the edit is in (``teacher_scope`` auto), where one phrase can move it, not the
    whole review, where it cannot (this teacher, like a real one, is unmoved by one phrase in
    a long text)."""
    text = "The acting was good. The plot was clever and fun. I loved it."
    o = Original("s1", {"text": text}, "positive", ("negative", "positive"), "sentiment")
    asked: list[str] = []

    class Teacher:
        labels = ("negative", "positive")

        def predict_proba(self, inputs):
            asked.extend(inputs)
            moved = [("awful" in x or "mess" in x) and len(x.split()) <= 8 for x in inputs]
            return np.array([[0.9, 0.1] if m else [0.4, 0.6] for m in moved])

    def fake_fills(requests, task, other, spans):
        return [[("awful", False), ("a total mess.", True), None] for _ in requests]

    def run(scope: str) -> list[object]:
        asked.clear()
        gen = LLMPromptGenerator(
            causal_lm_path=gpt2_path, teacher=Teacher(), max_spans=2, combine=1, teacher_scope=scope
        )
        monkeypatch.setattr(gen, "_chat_lm", lambda: True)
        monkeypatch.setattr(gen, "_chat_fills", fake_fills)
        return list(gen.generate([o]))

    cands = [c for c in run("auto") if isinstance(c, GeneratedCandidate)]
    assert cands and all(c.target_label == "negative" for c in cands)
    assert all(x.count(".") <= 1 for x in asked)  # sentences, not the review
    rest = [c for c in cands if c.meta["span_kind"].endswith("+rest")]
    assert rest, "a rest-of-sentence fill is a candidate"
    for c in rest:
        new = c.fields["text"]
        span = c.meta["span"]
        assert span.endswith(".") and text.replace(span, "a total mess.") == new
        assert c.meta["window"][1].endswith("a total mess.") and c.scores["teacher_shift"] == pytest.approx(0.5)
    assert any(c.meta["fill"] == "awful" for c in cands)

    out = run("text")  # the whole review: one phrase never moves this teacher
    assert text in asked
    assert (
        len(out) == 1 and isinstance(out[0], Skip) and "teacher_shift" in out[0].reason and "no_join" in out[0].reason
    )

    with pytest.raises(GeneratorConfigError, match="teacher_scope"):
        LLMPromptGenerator(causal_lm_path=gpt2_path, teacher_scope="sentence")
