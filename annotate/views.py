"""Annotator pages (home, instructions, the keyboard-first item page) and the researcher's
annotation-quality and routing pages. Thin: parse, call one service/selector, render. htmx requests get the
``annotate/item.html#stage`` fragment; plain form posts redirect (works without JavaScript)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from annotate import kinds, selectors
from annotate.forms import AnswerForm, ItemHistoryQuery, RouteForm, SkipForm
from annotate.models import Assignment
from annotate.services import assignments as svc
from annotate.services.quality import items_settle_waiting
from annotate.services.routing import (
    STRATEGIES,
    no_annotators_warning,
    project_add_check_items,
    project_route_start,
    scored_pool_count,
)
from projects import permissions
from projects.http import HtmxHttpRequest, bad_request
from projects.models import Project
from projects.permissions import researcher_required
from projects.selectors import job_latest, job_progress
from projects.services.jobs import BrokerUnavailable

NOT_YOUR_PROJECT = (
    "This project does not exist, or you are not (or no longer) one of its annotators. "
    "A researcher adds annotators to projects; your projects are listed on your annotation page."
)
NOT_YOUR_ASSIGNMENT = "There is no such item of yours: it may belong to a project you are no longer a member of."
FORM_EXPIRED = (
    "Not saved: this page's form had expired (you logged out and in again, perhaps in another tab), "
    "so nothing was recorded. The item is shown again with a fresh form: give your answer again."
)
PAGE_REFRESHED = (
    "This page's form had expired (you logged out and in again, perhaps in another tab): "
    "the item has been shown again with a fresh form. Nothing was lost."
)


class _NotYours(Exception):
    """An annotator page for a project or lease that is not the caller's: answered with the
    app's own 404 page (``_not_found``), also under DEBUG, where ``Http404`` shows Django's
    technical page (URL patterns and all) instead."""


def _not_found(request: HttpRequest, explanation: str) -> HttpResponse:
    return render(
        request,
        "_error_page.html",
        {"heading": "Not found (404)", "explanation": explanation, "detail": ""},
        status=404,
    )


def _stage_gone(explanation: str) -> HttpResponse:
    """The item page's stage (an htmx swap target) replaced by ``explanation`` and the way back:
    an answer, skip or undo on a lease that is gone (the project was deleted meanwhile). htmx
    swaps no 4xx answer, so a 404 left the page as it was and the key presses did nothing."""
    return HttpResponse(
        format_html(
            '<section id="stage" class="stage" aria-live="polite" data-gone="1"><div class="card error" role="alert">'
            '<p>{}</p><p><a class="button" href="{}">Back to your projects</a></p></div></section>',
            explanation,
            reverse("annotate-home"),
        )
    )


def _project_for_annotator(request: HttpRequest, project_id: int) -> Project:
    project = selectors.project_annotatable_by(project_id=project_id, user=request.user)
    if project is None:
        raise _NotYours(NOT_YOUR_PROJECT)
    return project


def _not_yours_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``_NotYours`` raised by the view -> the app's 404 page."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            response: HttpResponse = view(request, *args, **kwargs)
        except _NotYours as exc:
            if getattr(request, "htmx", False):  # htmx swaps no 404: the stage says it instead
                return _stage_gone(str(exc))
            return _not_found(request, str(exc))
        return response

    return wrapped


_NOT_GIVEN: Any = object()


def _stage_context(
    request: HttpRequest,
    project: Project,
    *,
    error: str = "",
    answered: selectors.AnsweredView | None = None,
    last: Any = _NOT_GIVEN,
) -> dict[str, Any]:
    """Lease (or keep) the next item and build the stage fragment's context. With ``answered``
    (the annotator came back to an item they answered), show that instead and lease nothing.
    ``last``: the annotator's undoable last answer when the caller knows it already (the
    answer just given), else it is read."""
    view = None
    blocked = ""
    if answered is None:
        try:
            view = svc.lease_next_view(project=project, annotator=request.user)
        except svc.NotAllowed as exc:
            blocked = str(exc)
    if blocked:  # every lease action, Undo too, is refused for the same reason: none offered
        last = None
    elif last is _NOT_GIVEN:
        last = None if answered else selectors.last_undoable(project=project, user=request.user)
    return {
        "project": project,
        "view": view,
        "answered": answered,
        "blocked": blocked,
        "member": selectors.member_state(project=project, user=request.user) if blocked else None,
        "error": error,
        "progress": selectors.annotator_progress(project=project, user=request.user),
        "last": last,
        "heartbeat_seconds": settings.COUNTERPART["HEARTBEAT_SECONDS"],
        "undo_seconds": settings.COUNTERPART["UNDO_SECONDS"],
    }


def _render_stage(
    request: HtmxHttpRequest, project: Project, *, error: str = "", status: int = 200, last: Any = _NOT_GIVEN
) -> HttpResponse:
    ctx = _stage_context(request, project, error=error, last=last)
    if request.htmx:
        return render(request, "annotate/item.html#stage", ctx, status=status)
    if error:
        messages.error(request, error)
    return redirect("annotate-work", project_id=project.pk)


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "annotate/home.html",
        {"rows": selectors.annotator_home(user=request.user), "holds_a_role": permissions.holds_a_role(request.user)},
    )


@login_required
@require_GET
@_not_yours_page
def instructions(request: HttpRequest, project_id: int) -> HttpResponse:
    project = _project_for_annotator(request, project_id)
    kind = kinds.kind_for_task(project.task)
    return render(
        request,
        "annotate/instructions.html",
        {
            "project": project,
            "labels": [lab.name for lab in project.labels.all()],
            "kind": kind,
            "instructions": kind.instructions_template,
            "undo_seconds": f"{settings.COUNTERPART['UNDO_SECONDS']} seconds",
        },
    )


@never_cache
@login_required
@require_GET
@_not_yours_page
def work(request: HttpRequest, project_id: int) -> HttpResponse:
    """The item page. Each item shown gets its own history entry (``?a=<assignment id>``, pushed
    by annotate.js), so browser Back / Forward comes back to an item already answered: it is
    shown as answered, with the answer and, while allowed, Undo (issue 20.11). Never cached, so
    Forward after leaving the page asks again instead of showing a stale item."""
    project = _project_for_annotator(request, project_id)
    answered = None
    query = ItemHistoryQuery.parse(request.GET)
    if not query.is_valid():
        return bad_request(query.error_text())
    if query.cleaned_data["a"] is not None:
        answered = selectors.answered_item(project=project, user=request.user, assignment_id=query.cleaned_data["a"])
    return render(request, "annotate/item.html", _stage_context(request, project, answered=answered))


def _not_done(what: str, exc: svc.AnnotationError) -> str:
    """The stage's message for an answer or skip the rules refused: first that it was NOT
    recorded (a bare "the lease expired; …" left the annotator guessing whether the answer
    counted), then why, an expired lease in the annotator's words. A refusal of the annotator
    (removed, paused, role taken away) is said as it is: the stage's card says it once."""
    reason = str(exc)
    if isinstance(exc, svc.NotAllowed):
        return reason
    if reason in (svc.LEASE_EXPIRED, "this lease was expired"):
        held = svc.lease_duration().total_seconds()
        span = f"{held / 60:g} minutes" if held >= 120 else f"{held:g} seconds"
        reason = (
            f"the item is held for you for {span} while this page is open, and that time ran out "
            "(the computer slept or the connection was lost), so it went back to the pool"
        )
    return f"{what}: {reason.rstrip('.')}."


def _own_assignment_project(request: HttpRequest, assignment_id: int) -> Project:
    a = Assignment.objects.select_related("project").filter(pk=assignment_id, annotator_id=request.user.pk).first()
    if a is None:
        raise _NotYours(NOT_YOUR_ASSIGNMENT)
    return a.project


def _form_expired_shows_the_item_again(message: str) -> Callable[[Callable[..., HttpResponse]], Any]:
    """An answer, skip, undo or heartbeat sent with a CSRF token the session no longer has (the
    annotator logged out and in again in another tab, which gives the session a new token) was
    refused with Django's "Form expired (403)" card, swapped over the item: the answer was lost
    without a word and the page offered no way on. The check is the same (Django's own, nothing
    is done on a refused token); a refusal now answers the stage itself: the same item, a form
    with the session's current token and ``message`` saying nothing was recorded. Without
    JavaScript: the message and a redirect to the item page. Logged out: the log-in page."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        check = CsrfViewMiddleware(lambda request: HttpResponse())

        @_not_yours_page
        def refused(request: HtmxHttpRequest, assignment_id: int) -> HttpResponse:
            project = _own_assignment_project(request, assignment_id)
            if not request.htmx:
                messages.error(request, message)
                return redirect("annotate-work", project_id=project.pk)
            return _render_stage(request, project, error=message)

        @csrf_exempt
        @wraps(view)
        def wrapped(request: HtmxHttpRequest, assignment_id: int) -> HttpResponse:
            if check.process_view(request, view, (), {"assignment_id": assignment_id}) is None:
                return view(request, assignment_id=assignment_id)
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            response = refused(request, assignment_id)
            if request.htmx:  # the stage, or why it is gone; the heartbeat's own target is a div in the item
                response["HX-Retarget"], response["HX-Reswap"] = "#stage", "outerHTML"
            return response

        return wrapped

    return decorate


@_form_expired_shows_the_item_again(FORM_EXPIRED)
@login_required
@require_POST
@_not_yours_page
def answer(request: HtmxHttpRequest, assignment_id: int) -> HttpResponse:
    project = _own_assignment_project(request, assignment_id)
    form = AnswerForm.parse(request.POST)
    if not form.is_valid():
        return bad_request(form.error_text())
    error, status, last = "", 200, _NOT_GIVEN
    try:
        result = svc.annotation_submit(
            assignment_id=assignment_id,
            annotator=request.user,
            choice=form.cleaned_data["choice"],
            duration_ms=form.cleaned_data["duration_ms"],
        )
        # the answer just given is the last one: undoable while its item is open (no query) and
        # there is an undo window at all (UNDO_SECONDS=0 turns undo off: no Undo to press)
        last = result.as_annotation() if result.item_open and selectors.undo_window().total_seconds() > 0 else None
    except svc.AnnotationError as exc:
        error, status = _not_done("Your answer was NOT saved", exc), exc.status
    return _render_stage(request, project, error=error, status=200 if request.htmx else status, last=last)


@_form_expired_shows_the_item_again(FORM_EXPIRED)
@login_required
@require_POST
@_not_yours_page
def skip(request: HtmxHttpRequest, assignment_id: int) -> HttpResponse:
    project = _own_assignment_project(request, assignment_id)
    form = SkipForm.parse(request.POST)
    if not form.is_valid():
        return bad_request(form.error_text())
    error = ""
    try:
        svc.assignment_skip(assignment_id=assignment_id, annotator=request.user, reason=form.cleaned_data["reason"])
    except svc.AnnotationError as exc:
        error = _not_done("The item was NOT skipped", exc)
    return _render_stage(request, project, error=error)


@_form_expired_shows_the_item_again(FORM_EXPIRED)
@login_required
@require_POST
@_not_yours_page
def undo(request: HtmxHttpRequest, assignment_id: int) -> HttpResponse:
    project = _own_assignment_project(request, assignment_id)
    error = ""
    try:
        svc.annotation_undo(assignment_id=assignment_id, annotator=request.user)
    except svc.AnnotationError as exc:
        error = str(exc)
    return _render_stage(request, project, error=error)


@_form_expired_shows_the_item_again(PAGE_REFRESHED)
@login_required
@require_POST
def heartbeat(request: HttpRequest, assignment_id: int) -> HttpResponse:
    try:
        expiry = svc.assignment_heartbeat(assignment_id=assignment_id, annotator=request.user)
    except svc.NotAllowed as exc:
        return HttpResponseStopPolling(
            format_html(
                '<p class="error" role="alert">{} <a href="{}">Back to your projects</a></p>',
                exc,
                reverse("annotate-home"),
            )
        )
    if expiry is None:
        if not Assignment.objects.filter(pk=assignment_id, annotator_id=request.user.pk).exists():
            # the lease itself is gone (its project was deleted): say so in place of the item,
            # as an answer, skip or undo does, rather than "released … reload for a new one"
            gone = _stage_gone(NOT_YOUR_ASSIGNMENT)
            resp = HttpResponseStopPolling(gone.content)
            resp["HX-Retarget"], resp["HX-Reswap"] = "#stage", "outerHTML"
            return resp
        return HttpResponseStopPolling(
            '<p class="error" role="alert">This item was released (the page was idle too long). '
            '<a href="">Reload</a> for a new one.</p>'
        )
    return HttpResponse(status=204)


# --- researcher pages ----------------------------------------------------------------------


@researcher_required
@require_GET
def quality(request: HttpRequest, project_id: int) -> HttpResponse:
    """The annotation-quality page (``/annotate/projects/<id>/dashboard/``, URL name
    ``annotate-dashboard``, kept for bookmarks): items, agreement, annotators, routing. Not the
    project dashboard (``workspace.dashboard``, ``/projects/<id>/dashboard/``)."""
    project = get_object_or_404(Project, pk=project_id)
    return render(request, "annotate/quality.html", _quality_context(project))


def _quality_context(project: Project) -> dict[str, Any]:
    route_job = job_latest(project=project, kind="route")
    return {
        "route_job": route_job,
        "route_progress": job_progress(job=route_job) if route_job else None,
        "project": project,
        "q": selectors.project_quality(project=project),
        "strategies": STRATEGIES,
        "candidates": selectors.annotator_candidates(project=project),
        "min_agreement": f"{float(settings.COUNTERPART['MIN_AGREEMENT']):.0%}",
        "max_k": settings.COUNTERPART["MAX_ANNOTATORS_PER_ITEM"],
        "waiting": selectors.items_waiting_summary(project=project),
        "checks": selectors.check_items_shortfall(project=project),
    }


@researcher_required
@require_POST
def waiting(request: HttpRequest, project_id: int) -> HttpResponse:
    """The remedy for items waiting for annotators (issue 18.10): lower their overlap to what
    their eligible annotators can still give and aggregate those that have their answers."""
    project = get_object_or_404(Project, pk=project_id)
    done = items_settle_waiting(project=project)
    parts = [f"Lowered the overlap of {done.lowered} item(s); {done.aggregated} aggregated with the answers there."]
    if done.no_annotator:
        parts.append(f"{done.no_annotator} item(s) have no answer and nobody to answer them: add or resume annotators.")
    if done.left:
        parts.append(f"{done.left} more item(s) are waiting: press the button again.")
    messages.success(request, " ".join(parts))
    return redirect(f"{reverse('annotate-dashboard', kwargs={'project_id': project.pk})}#waiting")


@researcher_required
@require_POST
def check_items(request: HttpRequest, project_id: int) -> HttpResponse:
    """The remedy for members whose fresh qualification window ran out of check items (issue
    25.3): add as many new check items as they lack, from the free pairs with a known answer."""
    project = get_object_or_404(Project, pk=project_id)
    done = project_add_check_items(project=project)
    text = f"Added {done.gold_items} check item(s)."
    if done.messages:
        messages.warning(request, " ".join([text, *done.messages]))
    else:
        messages.success(request, text)
    return redirect(f"{reverse('annotate-dashboard', kwargs={'project_id': project.pk})}#checks")


def _route_context(project: Project) -> dict[str, Any]:
    route_job = job_latest(project=project, kind="route")
    scored = scored_pool_count(project=project)
    return {
        "project": project,
        "strategies": STRATEGIES,
        "route_job": route_job,
        "route_progress": job_progress(job=route_job) if route_job else None,
        "no_annotators": no_annotators_warning(project),
        "budget": project.human_budget,
        # once h has scored the pool, the least confident pairs teach it most (issue 32.2)
        "strategy": "uncertainty" if scored else "random",
        "scored": scored,
        "errors": {},
    }


@researcher_required
@require_http_methods(["GET", "POST"])
def route(request: HttpRequest, project_id: int) -> HttpResponse:
    """GET: the routing form and the last routing job. POST: queue routing as a job (errors
    next to their fields, 400)."""
    project = get_object_or_404(Project, pk=project_id)
    ctx = _route_context(project)
    if request.method == "GET":
        return render(request, "annotate/route.html", ctx)
    form = RouteForm.parse(request.POST)
    ctx.update(form.shown())
    if not form.is_valid():
        return render(request, "annotate/route.html", {**ctx, "errors": form.field_errors()}, status=400)
    try:
        job = project_route_start(project=project, created_by=request.user, **form.cleaned_data)
    except ValidationError as exc:
        return render(
            request, "annotate/route.html", {**ctx, "errors": {"general": " ".join(exc.messages)}}, status=400
        )
    except BrokerUnavailable as exc:
        return render(
            request, "annotate/route.html", {**ctx, "errors": {"general": f"Routing not started: {exc}"}}, status=503
        )
    messages.success(request, f"Routing queued (job {job.pk}); its progress is shown below.")
    if ctx["no_annotators"]:
        messages.warning(request, ctx["no_annotators"])
    return redirect("annotate-route", project_id=project.pk)
