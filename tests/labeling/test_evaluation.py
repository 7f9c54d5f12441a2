"""The ``evaluate`` job: the API, the project-page section and the job handler, end to end
with the stand-in encoder and tiny models (Celery runs eagerly in tests)."""

from __future__ import annotations

import json
from html import unescape

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from labeling import evaluation, services
from labeling.ml.augmentation import VARIANTS
from labeling.selectors import gain_chart
from projects import permissions
from projects.models import Job

from .conftest import FakeEncoder, synthetic_pairs
from .test_services import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch, settings, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "MODEL_DIR": str(tmp_path / "models"),
        "SHARED_DATA_DIR": str(shared),
    }
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    monkeypatch.setattr(evaluation, "embedder", lambda: FakeEncoder())


def researcher(role=permissions.RESEARCHER):
    user = User.objects.create_user(f"{role}-{User.objects.count()}", password="pw-123456")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def api(role=permissions.RESEARCHER) -> APIClient:
    c = APIClient()
    c.force_authenticate(researcher(role))
    return c


def write_pairs(path, n=40):
    pairs, ys = synthetic_pairs(n, seed=11)
    with open(path, "w") as fh:
        for i, (p, y2) in enumerate(zip(pairs, ys, strict=True)):
            row = {
                "id": f"x{i}",
                "original": {"fields": p.original, "label": p.y},
                "counterfactual": {"fields": p.counterfactual, "label": y2},
            }
            fh.write(json.dumps(row) + "\n")


def test_api_runs_the_job_and_the_result_is_the_benchmark_shape(settings, django_capture_on_commit_callbacks):
    project, _ = make_project(n_pairs=160, n_human=40)
    path = f"{settings.COUNTERPART['SHARED_DATA_DIR']}/eval.jsonl"
    write_pairs(path)
    spec = f"pairs-jsonl:{path}"
    client = api()
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(
            f"/api/v1/projects/{project.pk}/evaluate/",
            {"evals": [spec, "project"], "budget": 0.25, "seeds": 1, "classifier": "tfidf-lr"},
            format="json",
        )
    assert resp.status_code == 202, resp.content
    body = resp.json()
    # done / total count the job's two steps, fixed before the first starts (issue 32.6)
    assert body["kind"] == "evaluate" and body["total"] == len(evaluation.STEPS) == 2
    job = Job.objects.get(pk=body["id"])
    assert job.status == "succeeded", job.error
    r = job.result
    assert {"task", "n_pairs", "budget", "seeds", "classifier", "eval", "seconds", "excluded"} <= set(r)
    assert r["task"] == "nli" and r["classifier"] == "tfidf-lr" and r["seeds"] == 1
    assert 100 < r["n_pairs"] < 160  # a held-out fifth of the groups left the pool
    # sets are named by title, never by a server path
    names = set(r["eval"])
    mine = "this project (held-out fifth)"
    assert names == {"pairs-jsonl eval.jsonl/original", "pairs-jsonl eval.jsonl/counterfactual"} | {
        f"{mine}/original",
        f"{mine}/counterfactual",
    }
    assert settings.COUNTERPART["SHARED_DATA_DIR"] not in json.dumps(r)
    cf = r["eval"]["pairs-jsonl eval.jsonl/counterfactual"]
    # a job's result is stored as JSON (jsonb on PostgreSQL keeps no key order): compare sets
    assert cf["n"] == 40 and cf["excluded"] == 0 and set(cf["variants"]) == set(VARIANTS) | {"export"}
    # your export: the 40 human labels, less those of the held-out groups
    assert 20 < r["export_pairs"] < 40 and r["excluded"] == 0
    assert cf["variants"]["originals"]["ci95"] is None  # one seed: no interval
    assert "gain" in cf["variants"]["capc"] and "p_vs_originals" in cf["variants"]["capc"]
    detail = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert detail["result"]["eval"].keys() == r["eval"].keys()


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"evals": ["pairs-jsonl:/etc/passwd"]}, "evals"),
        ({"evals": ["pairs-jsonl:../../../etc/passwd"]}, "evals"),
        ({"evals": ["cad-sentiment:/x:dev"]}, "evals"),  # another task's format
        ({"evals": []}, "evals"),
        ({"evals": ["project"], "budget": 1.5}, "budget"),
        ({"evals": ["project"], "seeds": 0}, "seeds"),
        ({"evals": ["project"], "classifier": "bert"}, "classifier"),
    ],
)
def test_api_refuses_bad_input(payload, field):
    project, _ = make_project(n_pairs=30, n_human=10)
    resp = api().post(f"/api/v1/projects/{project.pk}/evaluate/", payload, format="json")
    assert resp.status_code == 400, resp.content
    assert field in resp.json()
    assert not Job.objects.filter(kind="evaluate").exists()


def test_a_listed_keys_shape_for_a_split_the_shared_data_lacks_names_the_sets_there():
    """labelling.md's example asked for "cad-nli:test", which CAD NLI here lacks: it was refused as
    "only data under the shared data directory can be used", as if it were a path; now the answer
    says it is not one of the project's sets and lists them."""
    project, _ = make_project(n_pairs=30, n_human=10)
    resp = api().post(f"/api/v1/projects/{project.pk}/evaluate/", {"evals": ["cad-nli:test", "project"]}, format="json")
    assert resp.status_code == 400, resp.content
    assert resp.json()["evals"] == [
        "evaluation set 'cad-nli:test' is not one of this project's sets (project): the shared data directory has "
        "no cad-nli test split; a file of your own is FORMAT:PATH[:SPLIT], its path under the shared data directory"
    ]
    assert not Job.objects.filter(kind="evaluate").exists()


def test_api_refuses_a_project_without_labels_and_annotators():
    from projects.services.projects import project_create

    empty = project_create(name="empty", task="nli")
    resp = api().post(f"/api/v1/projects/{empty.pk}/evaluate/", {"evals": ["project"]}, format="json")
    assert resp.status_code == 400 and "project" in resp.json()
    resp = api(permissions.ANNOTATOR).post(f"/api/v1/projects/{empty.pk}/evaluate/", {"evals": ["project"]})
    assert resp.status_code == 403


def test_page_section_starts_a_job_and_shows_chart_and_table(client, django_capture_on_commit_callbacks):
    client.force_login(researcher())
    project, _ = make_project(n_pairs=160, n_human=40)
    page = client.get(f"/labeling/projects/{project.pk}/evaluation/")
    assert page.status_code == 200 and b"No evaluation yet" in page.content
    assert b'value="project"' in page.content and b"checked" not in page.content  # nothing pre-ticked
    # a free path is not accepted from the page, only the listed choices
    bad = client.post(f"/labeling/projects/{project.pk}/evaluate/", {"evals": "pairs-jsonl:/etc/passwd"})
    assert bad.status_code == 400 and b"from the list" in bad.content
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(
            f"/labeling/projects/{project.pk}/evaluate/",
            {"evals": "project", "budget": "0.25", "seeds": "2", "classifier": "tfidf-lr"},
            HTTP_HX_REQUEST="true",  # as the page's htmx form posts
        )
    assert resp.status_code == 200 and b"Evaluation queued" in resp.content
    page = client.get(f"/labeling/projects/{project.pk}/evaluation/")
    html = page.content.decode()
    assert "<svg" in html and "this project (held-out fifth): counterfactuals" in html
    assert "share of the known-labels gain" in html and "<table>" in html
    # every variant in plain words, no internal key
    for plain in ("Originals only", "Your export", "“Nothing flips”", "Pairwise h, confident only", "Known labels"):
        assert plain in html
    for key in ("capc-confident", ">capc<", ">pc<", ">gold<", ">invariant<", "{&#x27;"):
        assert key not in html
    detail = client.get(f"/projects/{project.pk}/evaluation/")  # the evaluation page (issue 32.1)
    assert f"/labeling/projects/{project.pk}/evaluation/" in detail.content.decode()


def test_gain_chart_geometry():
    chart = gain_chart(
        {
            "originals": {"accuracy": 0.6},
            "gold": {"gain": 0.2, "gain_ci95": [0.15, 0.25]},
            "invariant": {"gain": -0.1, "gain_ci95": None},
            "pc": {"error": "too few labels"},
        }
    )
    rows = {r["name"]: r for r in chart["rows"]}
    gold, inv, pc = "Known labels (reference)", "“Nothing flips”", "Pairwise h"
    assert set(rows) == {gold, inv, pc}  # plain words, not the variants' keys
    assert rows[pc]["na"] == "too few labels"
    assert rows[gold]["bar_x"] == chart["zero"] and rows[gold]["positive"]
    assert rows[gold]["ci_x1"] < rows[gold]["bar_x"] + rows[gold]["bar_w"] < rows[gold]["ci_x2"]
    assert rows[inv]["bar_x"] + rows[inv]["bar_w"] == pytest.approx(chart["zero"], abs=0.2)
    assert "ci_x1" not in rows[inv]


# -- the evaluation cannot fool the researcher (issue 19.3) ------------------------------------
def write_cad_nli_dev(shared, pairs, ys):
    """A CAD-NLI dev split under ``shared/cad`` made of the project's own pairs, shouted and
    re-punctuated (the same texts once normalized), as if the project had been imported from
    it; each original gets two revised hypotheses (the project's counterfactual) and two
    revised premises (new texts)."""
    root = shared / "cad" / "NLI"
    loud = lambda t: f"  {t.upper()} ."  # noqa: E731
    rows = {"original": [], "revised_premise": [], "revised_hypothesis": []}
    for p, y2 in zip(pairs, ys, strict=True):
        prem, hyp, cf_hyp = loud(p.original["premise"]), loud(p.original["hypothesis"]), p.counterfactual["hypothesis"]
        rows["original"].append(f"{prem}\t{hyp}\t{p.y}")
        rows["revised_hypothesis"] += [f"{prem}\t{loud(cf_hyp)}\t{y2}"] * 2
        rows["revised_premise"] += [f"{prem} again {k}\t{hyp}\t{p.y}" for k in range(2)]
    for part, lines in rows.items():
        (root / part).mkdir(parents=True, exist_ok=True)
        (root / part / "dev.tsv").write_text("\n".join(["sentence1\tsentence2\tgold_label", *lines]) + "\n")


def test_a_test_set_the_project_was_imported_from_is_left_out_and_counted(
    client, settings, tmp_path, django_capture_on_commit_callbacks
):
    from .conftest import synthetic_pairs as pairs_of

    client.force_login(researcher())
    project, ys = make_project(n_pairs=160, n_human=40)
    pairs, _ = pairs_of(160, seed=7)  # make_project's pairs
    shared = tmp_path / "shared"
    write_cad_nli_dev(shared, pairs[:40], ys[:40])
    html = client.get(f"/labeling/projects/{project.pk}/evaluation/").content.decode()
    # offered by key, with a title; nothing pre-ticked; no server path anywhere on the page
    assert 'value="cad-nli:dev"' in html and "CAD NLI dev" in html and "checked" not in html
    assert str(tmp_path) not in html
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(
            f"/labeling/projects/{project.pk}/evaluate/",
            {"evals": "cad-nli:dev", "budget": "0.25", "seeds": "1", "classifier": "tfidf-lr"},
            HTTP_HX_REQUEST="true",  # as the page's htmx form posts
        )
    assert resp.status_code == 200, resp.content
    job = Job.objects.filter(kind="evaluate").get()
    assert job.status == "succeeded", job.error
    assert job.params["evals"] == [f"cad-nli:{shared / 'cad'}:dev"]  # the server maps the key
    r = job.result
    orig, cf = r["eval"]["CAD NLI dev/original"], r["eval"]["CAD NLI dev/counterfactual"]
    assert orig == {"n": 0, "variants": {}, "excluded": 40}  # every original is in the pool
    assert (cf["n"], cf["excluded"]) == (80, 80)  # the revised hypotheses are the pool's counterfactuals
    assert r["excluded"] == 120 and r["export_pairs"] == 40
    html = client.get(f"/labeling/projects/{project.pk}/evaluation/").content.decode()
    assert "120 test examples left out" in html and "40 left out: also in the training data" in html
    assert "every example of this set is also training data" in html
    assert str(tmp_path) not in html and "cad-nli:" not in html.replace('value="cad-nli:dev"', "")
    # a set that is all training data (here the revised premises are the originals again) fails
    # the job, saying why
    (shared / "cad" / "NLI" / "revised_premise" / "dev.tsv").write_text(
        "\n".join(
            ["sentence1\tsentence2\tgold_label"]
            + [
                f"  {p.original['premise'].upper()} .\t  {p.original['hypothesis'].upper()} .\t{p.y}"
                for p in pairs[:40]
                for _ in range(2)
            ]
        )
        + "\n"
    )
    with django_capture_on_commit_callbacks(execute=True):
        resp = api().post(f"/api/v1/projects/{project.pk}/evaluate/", {"evals": ["cad-nli:dev"], "seeds": 1})
    failed = Job.objects.get(pk=resp.json()["id"])
    assert failed.status == "failed" and "also occurs in the training data" in failed.error
    assert str(tmp_path) not in failed.error


def test_your_export_holds_human_and_auto_labels_as_the_export_would(settings, django_capture_on_commit_callbacks):
    from projects.models import Candidate, Label

    project, _ = make_project(n_pairs=160, n_human=40)
    label = Label.objects.get(project=project, name="neutral")
    pooled = Candidate.objects.filter(project=project, state="pooled").order_by("id")
    auto_ids = list(pooled.values_list("id", flat=True)[:10])
    Candidate.objects.filter(pk__in=auto_ids).update(
        state="auto_labeled", label=label, label_source="auto", confidence=0.9
    )
    export = evaluation._project_export(project, hold_out=False)
    # the 40 human labels and the 10 auto labels; the pooled candidates (gold only) are not exported labels
    assert len(export.pairs) == 50 and export.y_prime.count("neutral") >= 10
    path = f"{settings.COUNTERPART['SHARED_DATA_DIR']}/eval.jsonl"
    write_pairs(path)
    with django_capture_on_commit_callbacks(execute=True):
        resp = api().post(
            f"/api/v1/projects/{project.pk}/evaluate/",
            {"evals": [f"pairs-jsonl:{path}"], "seeds": 1, "classifier": "tfidf-lr"},
            format="json",
        )
    r = Job.objects.get(pk=resp.json()["id"]).result
    assert r["export_pairs"] == 50
    v = r["eval"]["pairs-jsonl eval.jsonl/counterfactual"]["variants"]["export"]
    assert v["n_train"] == r["eval"]["pairs-jsonl eval.jsonl/counterfactual"]["variants"]["originals"]["n_train"] + 50


def test_set_titles_never_show_a_server_path():
    from labeling.selectors import eval_set_title

    assert eval_set_title("CAD NLI dev/original") == "CAD NLI dev: original sentences"
    assert eval_set_title("this project (held-out fifth)/counterfactual") == (
        "this project (held-out fifth): counterfactuals"
    )
    # results stored before sets had titles were named by their spec, path and all
    assert eval_set_title("cad-nli:/srv/shared/data/cad:dev/original") == "cad-nli dev: original sentences"
    assert "/srv" not in eval_set_title("pairs-jsonl:/srv/x/eval.jsonl/counterfactual")


def test_start_refuses_a_pool_the_job_would_fail_on(settings):
    """The start check is the job's: a pool of 20 passed it but lost its held-out fifth in the
    job ("only 16 labelled candidates left"), and a pool whose originals lack a label passed it
    and failed after every text was encoded ("the base classifier needs …"). Both are refused
    at once now, in words, and no job is queued."""
    from django.core.exceptions import ValidationError

    from projects.models import Example, Label

    small, _ = make_project(n_pairs=20, n_human=4, name="small")
    with pytest.raises(ValidationError) as exc:
        evaluation.evaluation_start(project=small, evals=["project"], classifier="tfidf-lr")
    assert "after the held-out fifth" in exc.value.message_dict["project"][0]
    one, _ = make_project(n_pairs=40, n_human=4, name="one-class")
    Example.objects.filter(project=one).update(label=Label.objects.get(project=one, name="entailment"))
    path = f"{settings.COUNTERPART['SHARED_DATA_DIR']}/eval.jsonl"
    write_pairs(path, n=10)
    with pytest.raises(ValidationError) as exc:
        evaluation.evaluation_start(project=one, evals=[f"pairs-jsonl:{path}"], classifier="tfidf-lr")
    message = exc.value.message_dict["project"][0]
    assert "have no label neutral, contradiction" in message and "originals of every label" in message
    resp = api().post(f"/api/v1/projects/{one.pk}/evaluate/", {"evals": [f"pairs-jsonl:{path}"]}, format="json")
    assert resp.status_code == 400 and "have no label" in resp.json()["project"][0]
    assert not Job.objects.filter(kind="evaluate").exists()


def test_an_image_caption_project_is_told_the_evaluation_is_not_for_it(client):
    """Its originals are captions without a class label, so the pool is always empty: the section
    said nothing and offered a form whose every post came back "only 0 candidates with a known
    label", as if labelling more would help."""
    from django.core.exceptions import ValidationError

    from projects.services.projects import project_create

    coco = project_create(name="coco", task="image-caption")
    with pytest.raises(ValidationError) as exc:
        evaluation.evaluation_start(project=coco, evals=["project"])
    assert "captions without a class label" in exc.value.message_dict["project"][0]
    client.force_login(researcher())
    html = unescape(client.get(f"/labeling/projects/{coco.pk}/evaluation/", HTTP_HX_REQUEST="true").content.decode())
    assert "Not for this project: an image-caption project's originals are captions" in html
    assert "<form" not in html and "Evaluate</button>" not in html


def _six_examples_result():
    """What the job returned on a 30-pair project scored on a 6-pair test set, one seed: every
    bar ±16.7 points (one example), none distinguishable from chance."""
    row = lambda gain, p: {"accuracy": 0.5 + gain, "macro_f1": 0.4, "ci95": None, "gain": gain, "p_vs_originals": p}  # noqa: E731
    variants = {
        "originals": {"accuracy": 0.5, "macro_f1": 0.4, "ci95": None},
        "export": row(-0.1667, 0.6567),
        "gold": row(-0.1667, 0.6567),
        "random": row(0.1667, 0.7126),
        "human": row(0.0, 1.0),
    }
    return {
        "task": "nli",
        "n_pairs": 24,
        "budget": 0.1,
        "seeds": 1,
        "classifier": "tfidf-lr",
        "seconds": 1.0,
        "excluded": 0,
        "export_pairs": 6,
        "eval": {"pairs-jsonl eval.jsonl/counterfactual": {"n": 6, "variants": variants, "excluded": 0}},
    }


def test_a_tiny_test_set_says_its_bars_are_chance_and_greys_them(client):
    """The section asks "does the labelled set make models robust?" and answered with coloured
    bars only: on 6 test examples "Random labels" showed a blue +16.7 and "Your export" a red
    −16.7, each one example and p ≈ 0.7, with nothing saying so. Now each set has a sentence
    with its n (what your export did, at what p; that no variant differs from chance) and a
    bar that does not differ at p < 0.05 is grey."""
    from django.utils import timezone

    from labeling.selectors import evaluation_verdict

    project, _ = make_project(n_pairs=30, n_human=6)
    Job.objects.create(
        project=project, kind="evaluate", status="succeeded", finished_at=timezone.now(), result=_six_examples_result()
    )
    client.force_login(researcher())
    html = unescape(client.get(f"/labeling/projects/{project.pk}/evaluation/").content.decode())
    assert "Your export: -16.7 points over Originals only (p = 0.657, n = 6): no difference" in html
    assert "No variant differs from Originals only at p < 0.05 on these 6 test examples" in html
    assert "one test example is 16.7 accuracy points" in html
    assert 'data-significant="yes"' not in html and html.count('data-significant="no"') == 4
    chart = gain_chart(_six_examples_result()["eval"]["pairs-jsonl eval.jsonl/counterfactual"]["variants"])
    assert not any(r["significant"] for r in chart["rows"])
    # a real difference is said so, and coloured
    helps = {
        "originals": {},
        "export": {"gain": 0.08, "p_vs_originals": 0.001},
        "gold": {"gain": 0.09, "p_vs_originals": 0.001},
    }
    verdict = evaluation_verdict(800, helps)
    assert verdict == "Your export: +8.0 points over Originals only (p = 0.001, n = 800): helps."
    assert all(r["significant"] for r in gain_chart(helps)["rows"])
    hurts = evaluation_verdict(50, {"export": {"gain": -0.2, "p_vs_originals": 0.01}})
    assert hurts.startswith("Your export: -20.0 points") and ": hurts." in hurts and "Only 50 test examples" in hurts


def test_the_verdict_says_when_random_labels_gain_as_much_as_the_export():
    """A gain over originals is not proof the labels help: random labels on the same kind of
    extra text can gain too (a QA run on CAD sentiment: random +17 points, p = 0.007). The
    verdict compares the export with the random floor when the comparison has one."""
    from labeling.selectors import evaluation_verdict

    base = {"originals": {"accuracy": 0.6}}
    matched = {
        **base,
        "export": {"accuracy": 0.83, "gain": 0.23, "p_vs_originals": 0.001, "p_vs_random": 0.12},
        "random": {"accuracy": 0.77, "gain": 0.17, "p_vs_originals": 0.007},
    }
    v = evaluation_verdict(400, matched)
    assert ": helps." in v
    assert "it is +6.0 points (p = 0.120): no better at p < 0.05" in v and "rather than its labels" in v
    beaten = {**matched, "export": {**matched["export"], "p_vs_random": 0.002}}
    assert "Its labels matter: +6.0 points over Random labels (p = 0.002)." in evaluation_verdict(400, beaten)
    # no floor in the comparison (or an older result without p_vs_random): nothing said of it
    assert "Random" not in evaluation_verdict(400, {**base, "export": matched["export"] | {"p_vs_random": None}})
