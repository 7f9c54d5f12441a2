"""The project's members page (``/annotate/projects/<id>/members/``): annotators and researchers;
add, pause, resume, remove. Thin: parse, call one service/selector, render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotate import selectors
from annotate.services.quality import membership_unflag
from annotate.services.routing import project_add_annotators
from projects.inputs import BadInput, form_id, form_ids
from projects.models import MEMBER_ROLES, Project, ProjectMembership
from projects.permissions import ANNOTATOR, researcher_required
from projects.services.memberships import (
    MembershipConflict,
    membership_add,
    membership_pause,
    membership_remove,
)


def _members_context(project: Project) -> dict[str, Any]:
    return {
        "project": project,
        "members": selectors.memberships_for(project=project),
        "candidates": selectors.member_candidates(project=project),
        "roles": MEMBER_ROLES,
        "errors": {},
        "form": {"role": "annotator", "username": ""},
    }


@researcher_required
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest, project_id: int) -> HttpResponse:
    """GET: the project's annotators and researchers. POST ``action``: ``add`` (username, role),
    ``remove``/``pause``/``resume`` (membership id); the old dashboard forms (``user`` ids,
    ``unflag``) keep working."""
    project = get_object_or_404(Project, pk=project_id)
    action = request.POST.get("action", "")
    if request.method == "GET":
        return render(request, "workspace/members.html", _members_context(project))
    try:
        unflag = form_id(request.POST["unflag"], "unflag") if request.POST.get("unflag") else None
        membership_id = form_id(request.POST["membership"], "membership") if request.POST.get("membership") else 0
        user_ids = form_ids(request.POST.getlist("user"), "user")
    except BadInput as exc:
        return HttpResponseBadRequest(str(exc))
    if unflag is not None:
        m = get_object_or_404(ProjectMembership, pk=unflag, project=project)
        was_paused = m.paused
        membership_unflag(membership=m)
        fresh = "" if was_paused else ": a fresh qualification window starts (earlier check answers no longer count)"
        messages.success(request, f"Cleared the flag on {m.user.username}{fresh}.")
        back = "annotate-members" if request.POST.get("next") == "members" else "annotate-dashboard"
        return redirect(back, project_id=project.pk)
    if action in ("remove", "pause", "resume"):
        m = get_object_or_404(ProjectMembership, pk=membership_id, project=project)
        if action == "remove":
            membership_remove(membership=m)
            messages.success(request, f"Removed {m.user.username} from {project.name}.")
        elif action == "pause":
            membership_pause(membership=m, by=request.user)
            messages.success(request, f"Paused {m.user.username}: no more items until resumed.")
        else:
            was_paused = m.paused
            membership_unflag(membership=m)
            fresh = "" if was_paused else "; a fresh qualification window starts"
            messages.success(request, f"Resumed {m.user.username}{fresh}.")
        return redirect("annotate-members", project_id=project.pk)
    if action == "add":
        form = {"username": request.POST.get("username", "").strip(), "role": request.POST.get("role", "annotator")}
        errors: dict[str, str] = {}
        if not form["username"]:
            errors["username"] = "choose an account"
        else:
            try:
                membership_add(project=project, username=form["username"], role=form["role"])
            except ValidationError as exc:
                errors = {k: " ".join(v) for k, v in exc.message_dict.items()}
            except MembershipConflict as exc:
                errors["username"] = str(exc)
        if errors:
            ctx = {**_members_context(project), "errors": errors, "form": form}
            status = 409 if "already" in errors.get("username", "") else 400
            return render(request, "workspace/members.html", ctx, status=status)
        messages.success(request, f"Added {form['username']} as {form['role']}.")
        return redirect("annotate-members", project_id=project.pk)
    # The dashboard's multi-select of annotator ids.
    users = list(get_user_model().objects.filter(pk__in=user_ids, groups__name=ANNOTATOR))
    added = project_add_annotators(project=project, users=users)
    messages.success(request, f"Added {added} annotator(s).")
    return redirect("annotate-dashboard", project_id=project.pk)
