"""Annotator pages (htmx fragments), the dashboard, and every role refusal."""

from datetime import timedelta
from html import unescape

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import strip_tags

from annotate.models import Annotation, Assignment, Item
from annotate.services.routing import project_route
from projects.models import Candidate, Example, ProjectMembership

from .factories import annotator, login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def project():
    p = project_with_candidates(n=6, k=2)
    project_route(project=p, budget=1.0, seed=0)
    return p


def test_home_lists_only_assigned_projects_with_start(project):
    project_with_candidates(name="secret", n=1)
    u = annotator(project)
    html = login(u).get("/annotate/").content.decode()
    assert "Start" in html and project.name in html and "secret" not in html


def test_instructions_then_work_page_shows_a_blind_item(project):
    u = annotator(project)
    c = login(u)
    inst = c.get(f"/annotate/projects/{project.pk}/instructions/").content.decode()
    assert "Worked examples" in inst and "Unclear / invalid" in inst
    page = c.get(f"/annotate/projects/{project.pk}/").content.decode()
    a = Assignment.objects.get(annotator=u)
    assert f'data-assignment="{a.pk}"' in page
    assert 'data-key="4"' in page  # 3 labels + unclear
    assert "Show the original" in page
    cand = a.item.candidate
    assert cand.fields["hypothesis"] in strip_tags(page)  # its changed words are <mark>ed
    # blind: no gold/auto label names attached to this item, no other answers
    assert "gold" not in page.lower().replace("golden", "")


def test_htmx_answer_returns_next_item_fragment_with_undo(project):
    u = annotator(project)
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=u)
    r = c.post(
        f"/annotate/assignments/{a.pk}/answer/", {"choice": "neutral", "duration_ms": "2500"}, HTTP_HX_REQUEST="true"
    )
    html = r.content.decode()
    assert r.status_code == 200 and html.lstrip().startswith('<section id="stage"')
    assert "<html" not in html  # a fragment
    nxt = Assignment.objects.filter(annotator=u, status="leased").get()
    assert f'data-assignment="{nxt.pk}"' in html and 'id="undo"' in html
    assert Annotation.objects.get().duration_ms == 2500
    r = c.post(f"/annotate/assignments/{a.pk}/undo/", HTTP_HX_REQUEST="true")
    assert f'data-assignment="{a.pk}"' in r.content.decode()
    assert Annotation.objects.count() == 0
    r = c.post(f"/annotate/assignments/{a.pk}/skip/", {"reason": "nonsense"}, HTTP_HX_REQUEST="true")
    assert Assignment.objects.get(pk=a.pk).status == "skipped"
    assert f'data-assignment="{nxt.pk}"' in r.content.decode()


def test_plain_post_without_js_redirects(project):
    u = annotator(project)
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=u)
    r = c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": "neutral"})
    assert r.status_code == 302 and Annotation.objects.count() == 1


def test_heartbeat_extends_and_stops_polling_when_gone(project, settings):
    u = annotator(project)
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=u)
    assert c.post(f"/annotate/assignments/{a.pk}/heartbeat/").status_code == 204
    Assignment.objects.filter(pk=a.pk).update(status="expired")
    assert c.post(f"/annotate/assignments/{a.pk}/heartbeat/").status_code == 286


def test_annotator_refusals(project):
    """An annotator cannot read or change another annotator's work, nor any researcher page."""
    u, v = annotator(project), annotator(project)
    cu, cv = login(u), login(v)
    cu.get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=u)
    for path in ["answer", "skip", "undo"]:
        r = cv.post(f"/annotate/assignments/{a.pk}/{path}/", {"choice": "neutral"})
        assert r.status_code == 404
    assert cv.post(f"/annotate/assignments/{a.pk}/heartbeat/").status_code == 286
    assert Annotation.objects.count() == 0 and Assignment.objects.get(pk=a.pk).status == "leased"
    # researcher pages
    assert cu.get(f"/annotate/projects/{project.pk}/dashboard/").status_code == 403
    assert cu.post(f"/annotate/projects/{project.pk}/route/", {"budget": "1"}).status_code == 403
    assert cu.post(f"/annotate/projects/{project.pk}/members/", {"user": [v.pk]}).status_code == 403
    assert cu.get("/projects/").status_code == 403
    assert cu.get(f"/projects/{project.pk}/").status_code == 403
    # another project's pages
    other = project_with_candidates(name="other", n=2)
    assert cu.get(f"/annotate/projects/{other.pk}/").status_code == 404
    assert cu.get(f"/annotate/projects/{other.pk}/instructions/").status_code == 404
    # anonymous → login
    assert Client().get("/annotate/").status_code == 302


def test_dashboard_for_researcher_shows_formulas_and_flags(project):
    users = [annotator(project) for _ in range(2)]
    for u in users:
        c = login(u)
        for _ in range(6):
            c.get(f"/annotate/projects/{project.pk}/")
            a = Assignment.objects.filter(annotator=u, status="leased").first()
            if a is None:
                break
            c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": "neutral"})
    r = researcher()
    html = login(r).get(f"/annotate/projects/{project.pk}/dashboard/").content.decode()
    assert "κ = (P̄ − P̄ₑ) / (1 − P̄ₑ)" in html and "α = 1 − Dₒ / Dₑ" in html
    assert "Dawid–Skene" in html
    assert 'data-testid="complete">6<' in html
    # researcher can add annotators and clear flags
    newbie = annotator()
    login(r).post(f"/annotate/projects/{project.pk}/members/", {"user": [newbie.pk]})
    m = ProjectMembership.objects.get(user=newbie)
    ProjectMembership.objects.filter(pk=m.pk).update(flagged=True, flag_reason="x")
    login(r).post(f"/annotate/projects/{project.pk}/members/", {"unflag": m.pk})
    m.refresh_from_db()
    # clearing a quality flag starts a fresh qualification window (issue 18.11)
    assert not m.flagged and m.qualified_at is None and m.gold_window_start is not None
    assert Item.objects.filter(status="complete").count() == 6


def test_caption_item_page_shows_image_and_both_captions(tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path)  # the images are there (a missing one: test_caption_image_and_skips.py)
    p = project_with_candidates(name="coco", task="image-caption", n=2, k=1)
    images = Example.objects.filter(project=p).values_list("image", flat=True)
    for path in [*images, *Candidate.objects.filter(project=p).values_list("image", flat=True)]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(b"img")
    project_route(project=p, budget=1.0, seed=0)
    u = annotator(p)
    html = login(u).get(f"/annotate/projects/{p.pk}/").content.decode()
    a = Assignment.objects.get(annotator=u)
    item = a.item
    assert "Select the caption which best describes the image." in html
    expected_img = item.candidate.example.image if item.side == "original" else item.candidate.image
    assert f'src="/media/{expected_img}"' in html
    assert item.candidate.fields["caption"] in html and item.candidate.example.fields["caption"] in html
    for shown in ["caption 1", "caption 2", "both", "neither"]:
        assert f'value="{shown}"' in html


def test_dashboard_renders_for_empty_and_caption_projects():
    r = login(researcher())
    empty = project_with_candidates(name="empty", n=3)
    assert "No answers yet." in r.get(f"/annotate/projects/{empty.pk}/dashboard/").content.decode()
    cap = project_with_candidates(name="cap", task="image-caption", n=2, k=1)
    project_route(project=cap, budget=1.0, seed=0)
    u = annotator(cap)
    c = login(u)
    for _ in range(4):
        c.get(f"/annotate/projects/{cap.pk}/")
        a = Assignment.objects.filter(annotator=u, status="leased").first()
        if a is None:
            break
        want = "caption_a" if a.item.side == "original" else "caption_b"
        c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": f"caption {a.display_order.index(want) + 1}"})
    html = r.get(f"/annotate/projects/{cap.pk}/dashboard/").content.decode()
    assert "Image pairs fully judged: 2, of which 2" in html
    assert "66%" in html or "66 %" in html


def test_coming_back_to_an_answered_item_shows_it_answered_with_undo(project, settings):
    """Issue 20.11: Back / Forward to an item (``?a=<assignment>``) already answered shows the
    answer and Undo, not a fresh item with a stale count; the page is never cached."""
    u = annotator(project)
    c = login(u)
    first = c.get(f"/annotate/projects/{project.pk}/")
    assert "no-store" in first["Cache-Control"]
    a = Assignment.objects.get(annotator=u)
    assert f'data-url="/annotate/projects/{project.pk}/?a={a.pk}"' in first.content.decode()
    c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": "neutral"}, HTTP_HX_REQUEST="true")
    live = Assignment.objects.get(annotator=u, status="leased")

    r = c.get(f"/annotate/projects/{project.pk}/?a={a.pk}")
    html = r.content.decode()
    assert r.status_code == 200 and "no-store" in r["Cache-Control"]
    assert 'data-testid="answered">1<' in html
    assert "You answered this item: <strong>neutral</strong>" in html
    assert 'aria-pressed="true" class="chosen"' in html and 'value="neutral"' not in html
    assert f'hx-post="/annotate/assignments/{a.pk}/undo/"' in html and 'id="undo"' in html
    assert a.item.candidate.fields["hypothesis"] in strip_tags(html)
    assert "answer-form" not in html  # nothing to submit again, no second lease taken
    assert Assignment.objects.filter(annotator=u).count() == 2

    # undo from there: the item comes back live
    r = c.post(f"/annotate/assignments/{a.pk}/undo/", HTTP_HX_REQUEST="true")
    assert f'data-assignment="{a.pk}"' in r.content.decode()
    # the live item's own URL shows it to answer
    html = c.get(f"/annotate/projects/{project.pk}/?a={live.pk}").content.decode()
    assert "You answered" not in html and "answer-form" in html

    # once the undo window has passed: shown answered, without Undo
    c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": "entailment"}, HTTP_HX_REQUEST="true")
    settings.COUNTERPART = {**settings.COUNTERPART, "UNDO_SECONDS": 0}
    html = c.get(f"/annotate/projects/{project.pk}/?a={a.pk}").content.decode()
    assert "You answered this item: <strong>entailment</strong>" in html
    assert 'id="undo"' not in html and "can no longer be undone" in html


def test_item_url_of_someone_else_or_garbage(project):
    u, other = annotator(project), annotator(project)
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=u)
    c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": "neutral"}, HTTP_HX_REQUEST="true")
    # someone else's answered item: not shown; the other annotator just gets an item to answer
    html = login(other).get(f"/annotate/projects/{project.pk}/?a={a.pk}").content.decode()
    assert "You answered" not in html and "answer-form" in html
    assert login(u).get(f"/annotate/projects/{project.pk}/?a=x1").status_code == 400


def test_instructions_number_the_labels_in_their_fixed_order(project):
    html = login(annotator(project)).get(f"/annotate/projects/{project.pk}/instructions/").content.decode()
    assert "labels keep the same order on every item" in html
    assert "(<kbd>1</kbd> entailment, <kbd>2</kbd> neutral, <kbd>3</kbd> contradiction, <kbd>4</kbd> Unclear" in html


def test_the_page_refuses_a_duration_that_is_no_number_and_echoes_a_long_choice_shortened(project):
    """As the API: ``duration_ms=abc`` is a 400 (it used to be dropped and the answer stored);
    a 100 KB choice that was not offered is quoted in the message cut to 80 characters."""
    u = annotator(project)
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=u)
    r = c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": "neutral", "duration_ms": "abc"})
    assert r.status_code == 400 and b"duration_ms" in r.content
    assert not Annotation.objects.exists()
    r = c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": "x" * 100_000}, HTTP_HX_REQUEST="true")
    html = r.content.decode()
    assert "x" * 80 + "…" in html and "x" * 81 not in html
    assert not Annotation.objects.exists()


def test_with_undo_turned_off_the_answer_offers_no_undo(project, settings):
    """UNDO_SECONDS=0: every undo is refused ("the undo window has passed"), yet the stage
    that follows an answer showed "Undo u" (the check read ``>= 0``)."""
    settings.COUNTERPART = {**settings.COUNTERPART, "UNDO_SECONDS": 0}
    u = annotator(project)
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=u)
    html = c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": "neutral"}, HTTP_HX_REQUEST="true").content
    assert Annotation.objects.filter(assignment=a).exists()
    assert b'id="undo"' not in html and b'class="undo-bar"' not in html


def test_an_answer_or_skip_on_an_expired_lease_says_it_was_not_saved_and_why(project, settings):
    """It said only "the lease expired; the item went back to the pool": was the answer counted?
    Now it says first that it was NOT saved, and why in the annotator's words; the next item
    comes with it."""
    settings.COUNTERPART = {**settings.COUNTERPART, "LEASE_SECONDS": 300}
    u = annotator(project)
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=u)
    for action, said in (("answer", "Your answer was NOT saved"), ("skip", "The item was NOT skipped")):
        Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
        r = c.post(f"/annotate/assignments/{a.pk}/{action}/", {"choice": "neutral"}, HTTP_HX_REQUEST="true")
        html = unescape(r.content.decode())
        assert f"{said}: the item is held for you for 5 minutes while this page is open" in html
        assert "went back to the pool." in html
        assert Annotation.objects.count() == 0
        assert 'id="answer-form"' in html and f'data-assignment="{a.pk}"' not in html  # the next item
