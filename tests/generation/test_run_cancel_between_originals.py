"""A cancel lands between originals, not only between batches: a batch of 16 originals of an
LM generator once took minutes (an llm-prompt run ignored its cancel for over 7 minutes).
The service checks between the originals a generator yields; generators built on
``PerOriginalGenerator`` (llm-prompt, concept-constrained, rationale-infill) and coco-cf check
before each original and inside their long per-original loops. The batch in progress is not
written; the run ends ``cancelled``."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from generation.ml import registry
from generation.ml.base import GeneratedCandidate, Original, PerOriginalGenerator, Skip, StopRequested
from generation.services import runs
from generation.services.runs import run_cancel, run_create, run_execute
from projects.models import Candidate
from tests.generation.run_fixtures import EchoGenerator, make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

SEEN: list[str] = []


@pytest.fixture(autouse=True)
def _probe_every_call(monkeypatch):
    """The probe reads the database at most once a second; here on every call (no timing)."""
    monkeypatch.setattr(runs, "cancel_probe", functools.partial(runs.cancel_probe, every=0))
    SEEN.clear()
    yield
    for name in ("test-echo-cancel", "test-per-original-cancel"):
        registry.unregister(name)


def _cancel_the_run_of(original_id: str) -> None:
    from generation.models import GenerationRun

    run = GenerationRun.objects.select_related("job").get(job__status="running")
    if original_id.endswith("002"):
        run_cancel(run=run)


class EchoCancel(EchoGenerator):
    """A generator with no stop points of its own; the run is cancelled while it works on
    its third original."""

    name = "test-echo-cancel"

    def generate(self, originals):
        for item in super().generate(originals):
            if item.original_id not in SEEN:
                SEEN.append(item.original_id)
                _cancel_the_run_of(item.original_id)
            yield item


class PerOriginalCancel(PerOriginalGenerator):
    name = "test-per-original-cancel"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def _one(self, original: Original) -> Iterator[GeneratedCandidate | Skip]:
        SEEN.append(original.id)
        _cancel_the_run_of(original.id)
        field = next(iter(original.fields))
        yield GeneratedCandidate(original.id, {**original.fields, field: "changed"}, self.name)


@pytest.mark.parametrize(
    ("name", "factory", "most"),
    [("test-echo-cancel", EchoCancel, 4), ("test-per-original-cancel", PerOriginalCancel, 3)],
)
def test_a_cancel_stops_the_generator_before_its_next_original(name, factory, most):
    registry.register(name, factory=factory)
    project = make_project(name="cancel", n=16)
    run = run_create(project=project, generator=name, options={"filters": ["dedup"], "batch_size": 16})
    run = run_execute(run_id=run.pk)
    assert run.status == "cancelled" and run.cancel_requested
    # the generator was stopped right after the original it was cancelled in (a generator
    # without stop points is stopped when it moves on: it may have started one more)
    assert 3 <= len(SEEN) <= most < 16
    assert run.done == 0 and not Candidate.objects.filter(job_id=run.job_id).exists()  # the batch is dropped


def test_llm_prompt_stops_inside_an_original_between_its_generate_calls(tmp_path, monkeypatch):
    """One original of llm-prompt (causal, non-chat LM) makes one ``generate`` call per blank
    and target: a cancel lands between them, not after the whole original."""
    from generation.ml.llm_prompt import LLMPromptGenerator
    from tests.generation._tiny_hf import save_gpt2

    gen = LLMPromptGenerator(
        causal_lm_path=str(save_gpt2(tmp_path / "gpt2")), max_spans=3, span_mode="window", num_return_sequences=1
    )
    calls: list[str] = []
    real = gen._fills

    def counted(*a, **k):
        calls.append(a[3])
        return real(*a, **k)

    monkeypatch.setattr(gen, "_fills", counted)
    gen.should_stop = lambda: len(calls) >= 1  # the run is cancelled during the first call
    premise = "A young man is riding a brown horse in the open field near the old barn today."
    originals = [
        Original(
            id=f"n{i}",
            fields={"premise": premise, "hypothesis": "A person is outdoors."},
            label="entailment",
            labels=("entailment", "neutral", "contradiction"),
            task="nli",
        )
        for i in range(3)
    ]
    with pytest.raises(StopRequested):
        list(gen.generate(originals))
    assert len(calls) == 1  # 3 blanks x 2 targets would be 6 calls for this original alone


def test_sampling_and_hf_generate_stop_within_a_token_once_cancelled(tmp_path):
    """The bundled SmolLM2's path (``sample_continuations``) checks before each token; other
    ``model.generate`` calls get a stopping criterion that ends them at the next token."""
    import torch

    from generation.ml import hf
    from tests.generation._tiny_hf import save_gpt2

    lm = hf.load_causal_lm(str(save_gpt2(tmp_path / "gpt2")))
    enc = lm.tokenizer(["a man is riding a horse"], return_tensors="pt")
    checks: list[int] = []

    def stop_at_third_token() -> bool:
        checks.append(1)
        return len(checks) > 3

    with pytest.raises(StopRequested):
        hf.sample_continuations(
            lm.model, enc["input_ids"], enc["attention_mask"], n=2, max_new_tokens=40, should_stop=stop_at_third_token
        )
    assert len(checks) == 4  # three tokens, then the cancel

    checks.clear()
    with torch.no_grad():
        out = lm.model.generate(
            **enc,
            max_new_tokens=40,
            min_new_tokens=40,
            do_sample=False,
            pad_token_id=lm.tokenizer.eos_token_id,
            stopping_criteria=hf.stop_criteria(stop_at_third_token),
        )
    assert out.shape[1] - enc["input_ids"].shape[1] < 10  # ended early, not after 40 tokens
    assert hf.stop_criteria(None) is None
