"""The project's members page (``/annotate/projects/<id>/members/``): annotators and researchers;
add, pause, resume, remove. Thin: parse, call one service/selector, render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotate import selectors
from annotate.services.quality import membership_unflag
from annotate.services.routing import project_add_annotators
from projects.http import bad_request
from projects.models import MEMBER_ROLES, Project, ProjectMembership
from projects.permissions import ANNOTATOR, researcher_required
from projects.services.memberships import (
    MembershipConflict,
    membership_add,
    membership_pause,
    membership_remove,
)
from workspace.members.forms import MembersForm


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
    if request.method == "GET":
        return render(request, "workspace/members.html", _members_context(project))
    form = MembersForm.parse(request.POST)
    if not form.is_valid():
        return bad_request(form.error_text())
    data = form.cleaned_data
    action, unflag = data["action"], data["unflag"]
    if unflag is not None:
        m = get_object_or_404(ProjectMembership, pk=unflag, project=project)
        was_paused = m.paused
        membership_unflag(membership=m)
        fresh = "" if was_paused else ": a fresh qualification window starts (earlier check answers no longer count)"
        messages.success(request, f"Cleared the flag on {m.user.username}{fresh}.")
        back = "annotate-members" if data["next"] == "members" else "annotate-dashboard"
        return redirect(back, project_id=project.pk)
    if action in ("remove", "pause", "resume"):
        m = get_object_or_404(ProjectMembership, pk=data["membership"] or 0, project=project)
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
        shown = {"username": data["username"], "role": data["role"]}
        errors: dict[str, str] = {}
        if not shown["username"]:
            errors["username"] = "choose an account"
        else:
            try:
                membership_add(project=project, username=shown["username"], role=shown["role"])
            except ValidationError as exc:
                errors = {k: " ".join(v) for k, v in exc.message_dict.items()}
            except MembershipConflict as exc:
                errors["username"] = str(exc)
        if errors:
            ctx = {**_members_context(project), "errors": errors, "form": shown}
            status = 409 if "already" in errors.get("username", "") else 400
            return render(request, "workspace/members.html", ctx, status=status)
        messages.success(request, f"Added {shown['username']} as {shown['role']}.")
        return redirect("annotate-members", project_id=project.pk)
    # The dashboard's multi-select of annotator ids.
    users = list(get_user_model().objects.filter(pk__in=data["user"], groups__name=ANNOTATOR))
    added = project_add_annotators(project=project, users=users)
    messages.success(request, f"Added {added} annotator(s).")
    return redirect("annotate-dashboard", project_id=project.pk)
