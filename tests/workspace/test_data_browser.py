"""The researcher's data browser: filters, keyset pages, the pair view and the override."""

import pytest
from django.test import Client

from annotate.models import Assignment
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects.ml.textdiff import word_diff
from projects.models import Candidate, Label, LabelOverride
from tests.annotate.factories import annotator, login, project_with_candidates, researcher
from workspace.data.selectors import CandidateFilters, candidates_browse

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def project():
    return project_with_candidates(n=120, k=2)


def test_word_diff_marks_the_edit_and_keeps_both_texts():
    segs = word_diff("The man works for Camden.", "The man walks away from Camden.")
    assert "".join(s.text for s in segs if s.op != "ins") == "The man works for Camden."
    assert "".join(s.text for s in segs if s.op != "del") == "The man walks away from Camden."
    assert [s.text for s in segs if s.op == "del"] == ["works for"]
    assert [s.text for s in segs if s.op == "ins"] == ["walks away from"]


@pytest.mark.parametrize("url", ["/projects/{p}/candidates/", "/candidates/{c}/"])
def test_pages_by_role(project, url):
    c = Candidate.objects.filter(project=project).first()
    url = url.format(p=project.pk, c=c.pk)
    assert login(researcher()).get(url).status_code == 200
    assert login(annotator(project)).get(url).status_code == 403
    resp = Client().get(url)
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


def test_keyset_pages_cover_everything_once(project):
    ids, after, pages = [], None, 0
    while True:
        page = candidates_browse(project=project, filters=CandidateFilters(), after=after)
        ids += [r["id"] for r in page.rows]
        pages += 1
        if not page.has_next:
            break
        after = page.last_id
    assert ids == sorted(Candidate.objects.filter(project=project).values_list("id", flat=True))
    assert pages == 3
    back = candidates_browse(project=project, filters=CandidateFilters(), before=page.first_id)
    assert [r["id"] for r in back.rows] == ids[50:100] and back.has_prev and back.has_next


def test_page_links_and_filters(project):
    c = login(researcher())
    html = c.get(f"/projects/{project.pk}/candidates/?perturbation=negation").content.decode()
    assert "more →" in html and "after=" in html and "perturbation=negation" in html
    first = Candidate.objects.filter(project=project, perturbation="negation").order_by("id").first()
    assert first.external_id in html
    other = Candidate.objects.filter(project=project).exclude(perturbation="negation").order_by("id").first()
    assert f">{other.external_id}<" not in html
    # htmx gets only the results fragment
    frag = c.get(f"/projects/{project.pk}/candidates/?state=pooled", HTTP_HX_REQUEST="true").content.decode()
    assert frag.lstrip().startswith('<section class="card" id="results"')


def test_filter_errors_are_shown_next_to_each_field_at_once(project):
    resp = login(researcher()).get(f"/projects/{project.pk}/candidates/?state=bogus&min_confidence=2&label=nope&flip=x")
    html = resp.content.decode()
    assert resp.status_code == 400
    for field_id in ("e-state", "e-min", "e-label", "e-flip"):
        assert f'id="{field_id}"' in html


def test_flip_confidence_gold_and_disagreement_filters(project):
    labels = {lab.name: lab for lab in Label.objects.filter(project=project)}
    cands = list(Candidate.objects.filter(project=project).select_related("example").order_by("id")[:4])
    orig = cands[0].example.label
    other = next(lab for lab in labels.values() if lab != orig)
    Candidate.objects.filter(pk=cands[0].pk).update(
        state="auto_labeled", label=other, label_source="auto", confidence=0.9
    )
    Candidate.objects.filter(pk=cands[1].pk).update(
        state="auto_labeled", label=cands[1].example.label, label_source="auto", confidence=0.4
    )
    got = lambda **kw: [r["id"] for r in candidates_browse(project=project, filters=CandidateFilters(**kw)).rows]  # noqa: E731
    assert got(flip="flip") == [cands[0].pk]
    assert got(flip="keep") == [cands[1].pk]
    assert got(min_confidence=0.5) == [cands[0].pk]
    assert got(max_confidence=0.5) == [cands[1].pk]
    assert got(label_source="auto") == [cands[0].pk, cands[1].pk]
    assert len(got(gold="yes")) == 0
    # two annotators disagree on one routed item
    project_route(project=project, budget=0.05, seed=0)
    u1, u2 = annotator(project), annotator(project)
    a1 = svc.assignment_next(project=project, annotator=u1)
    svc.annotation_submit(assignment_id=a1.pk, annotator=u1, choice="entailment")
    a2 = svc.assignment_next(project=project, annotator=u2)
    assert a2.item_id == a1.item_id  # breadth-first
    svc.annotation_submit(assignment_id=a2.pk, annotator=u2, choice="neutral")
    assert got(disagreement=True) == [a1.item.candidate_id]


def test_pair_view_shows_the_edit_annotations_and_override(project):
    project_route(project=project, budget=0.05, seed=0)
    u = annotator(project)
    a = svc.assignment_next(project=project, annotator=u)
    svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral")
    cand = Assignment.objects.get(pk=a.pk).item.candidate
    r = researcher(username="boss")
    c = login(r)
    html = c.get(f"/candidates/{cand.pk}/").content.decode()
    assert '<ins class="diff">' in html or '<del class="diff">' in html
    assert u.username in html and "neutral" in html
    # override: errors next to the field, then success recorded with who/when
    bad = c.post(f"/candidates/{cand.pk}/override/", {"label": "bogus"})
    assert bad.status_code == 400 and 'id="o-label-error"' in bad.content.decode()
    ok = c.post(f"/candidates/{cand.pk}/override/", {"label": "contradiction", "note": "clearly"})
    assert ok.status_code == 302
    cand.refresh_from_db()
    assert cand.state == "human_labeled" and cand.label.name == "contradiction" and cand.label_source == "human"
    o = LabelOverride.objects.get(candidate=cand)
    assert o.created_by == r and o.previous_state == "routed" and o.note == "clearly"
    html = c.get(f"/candidates/{cand.pk}/").content.decode()
    assert "boss" in html and "clearly" in html
    # a second override of a human label changes the label again and is recorded too
    c.post(f"/candidates/{cand.pk}/override/", {"label": "entailment"})
    cand.refresh_from_db()
    assert cand.label.name == "entailment" and LabelOverride.objects.filter(candidate=cand).count() == 2


def test_relabel_without_a_change_records_nothing(project):
    """Issue 20.14: the same human label again is "nothing changed", not a no-op override; an
    auto label confirmed by a researcher does change (its source) and is recorded."""
    from rest_framework.test import APIClient

    cand = Candidate.objects.filter(project=project).first()
    r = researcher(username="boss2")
    c = login(r)
    c.post(f"/candidates/{cand.pk}/override/", {"label": "neutral"})
    assert LabelOverride.objects.filter(candidate=cand).count() == 1
    again = c.post(f"/candidates/{cand.pk}/override/", {"label": "neutral", "note": "sure"}, follow=True)
    assert again.status_code == 200
    assert f"Nothing changed: {cand.external_id} is already labelled neutral by a human" in again.content.decode()
    assert LabelOverride.objects.filter(candidate=cand).count() == 1
    api = APIClient()
    api.force_authenticate(r)
    resp = api.post(f"/api/v1/candidates/{cand.pk}/override/", {"label": "neutral"}, format="json")
    assert resp.status_code == 200 and LabelOverride.objects.filter(candidate=cand).count() == 1
    # an auto label confirmed as it is: the source changes to human, so it is recorded
    other = Candidate.objects.filter(project=project).exclude(pk=cand.pk).first()
    label = Label.objects.get(project=project, name="entailment")
    Candidate.objects.filter(pk=other.pk).update(state="auto_labeled", label=label, label_source="auto", confidence=0.9)
    c.post(f"/candidates/{other.pk}/override/", {"label": "entailment"})
    other.refresh_from_db()
    assert other.label_source == "human" and LabelOverride.objects.filter(candidate=other).count() == 1


def test_rows_show_every_field_with_the_edit_highlighted():
    """An NLI pair that edits only the hypothesis is visible as such (issue 20.6): every text
    field is shown, the edited one with <del>/<ins>, the same on the page and in the API."""
    from projects.services.projects import project_create

    project = project_create(name="nli-fields", task="nli")
    label = Label.objects.get(project=project, name="neutral")
    ex = project.examples.create(
        external_id="snli-dev-0",
        fields={"premise": "A boy kicks a ball.", "hypothesis": "A boy plays outside."},
        label=label,
    )
    for i, hyp in enumerate(["A boy plays inside.", "A girl plays outside."]):
        Candidate.objects.create(
            project=project,
            example=ex,
            external_id=f"snli-dev-0-rh{i}",
            fields={"premise": "A boy kicks a ball.", "hypothesis": hyp},
            state="pooled",
        )
    page = candidates_browse(project=project, filters=CandidateFilters())
    first, second = (row["edits"] for row in page.rows)
    assert [f["name"] for f in first] == ["premise", "hypothesis"]
    assert [f["changed"] for f in first] == [False, True]
    assert [s for s in first[1]["segments"] if s["op"] != "equal"] == [
        {"op": "del", "text": "outside"},
        {"op": "ins", "text": "inside"},
    ]
    assert [s["text"] for s in second[1]["segments"] if s["op"] == "ins"] == ["girl"]
    html = login(researcher()).get(f"/projects/{project.pk}/candidates/").content.decode()
    assert '<del class="diff">outside</del><ins class="diff">inside</ins>' in html
    assert '<span class="field-name">premise:</span> A boy kicks a ball.' in html
    api = login(researcher()).get(f"/api/v1/projects/{project.pk}/candidates/").json()
    assert api["results"][0]["edits"][1]["segments"][1] == {"op": "del", "text": "outside"}


def test_a_long_field_is_clipped_around_its_first_change():
    from workspace.data.selectors import ROW_FIELD_CHARS, _field_edits

    before = "word " * 200 + "good film."
    (edit,) = _field_edits({"text": before}, {"text": before.replace("good", "bad")}, ["text"])
    text = "".join(s["text"] for s in edit["segments"])
    assert text.startswith("…") and "bad" in text and len(text) <= ROW_FIELD_CHARS + 45


def test_the_filter_forms_address_leaves_out_empty_fields(project):
    """The form sends every field: htmx pushed ?state=&generator=&perturbation=negation&label=&…
    into the address bar and history. Now the pushed address (HX-Push-Url) is the same search
    without the empty fields, and a plain submit or an old bookmark with them is redirected to
    it; Back and bookmarks then load the same results."""
    c = login(researcher())
    base = f"/projects/{project.pk}/candidates/"
    raw = f"{base}?generator=&perturbation=negation&label_source=&label=&min_confidence=&gold="
    frag = c.get(raw, HTTP_HX_REQUEST="true")
    assert frag.status_code == 200
    assert frag["HX-Push-Url"] == f"{base}?perturbation=negation"
    plain = c.get(raw)
    assert plain.status_code == 302 and plain["Location"] == f"{base}?perturbation=negation"
    assert c.get(f"{base}?generator=&label=", HTTP_HX_REQUEST="true")["HX-Push-Url"] == base
    # the clean address shows what the raw one would have
    page = c.get(plain["Location"])
    assert page.status_code == 200
    first = Candidate.objects.filter(project=project, perturbation="negation").order_by("id").first()
    assert first.external_id in page.content.decode()
    # several states stay; cursors stay; an invalid value is kept, to be shown with its error
    multi = c.get(f"{base}?state=pooled&state=routed&generator=&after=5", HTTP_HX_REQUEST="true")
    assert multi["HX-Push-Url"] == f"{base}?state=pooled&state=routed&after=5"
    bad = c.get(f"{base}?min_confidence=2&label=", HTTP_HX_REQUEST="true")
    assert bad.status_code == 400 and bad["HX-Push-Url"] == f"{base}?min_confidence=2"
    # Back to an address htmx no longer holds in its history cache: it asks for the whole page
    restore = c.get(f"{base}?perturbation=negation", HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert restore.status_code == 200 and b'id="filters"' in restore.content
