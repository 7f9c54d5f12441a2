"""Who works on which project: add and remove annotators and researchers, pause an annotator
(they get no more items until resumed). A pause is a flag with the reason "paused by …", so
the annotation service's existing "flagged annotators get no items" rule applies."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from projects import permissions
from projects.models import MEMBER_ROLES, Project, ProjectMembership


class MembershipConflict(Exception):
    """The membership already exists (409)."""


def _role_ok(user: Any, role: str) -> bool:
    if role == permissions.RESEARCHER:
        return permissions.is_researcher(user)
    return permissions.is_annotator(user)


def membership_add(*, project: Project, username: str, role: str = "annotator") -> ProjectMembership:
    """Make ``username`` a member of ``project`` as ``role``. The account must hold that role
    (the ``annotator`` or ``researcher`` group). Raises ``ValidationError`` with field names
    (``username``, ``role``) and :class:`MembershipConflict` when already a member."""
    if role not in MEMBER_ROLES:
        raise ValidationError({"role": f"choose one of {', '.join(MEMBER_ROLES)}"})
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError({"username": f"no account named {username!r}"})
    if not user.is_active:
        raise ValidationError({"username": f"{username} is not an active account"})
    if not _role_ok(user, role):
        raise ValidationError({"role": f"{username} does not have the {role} role"})
    try:
        with transaction.atomic():
            return ProjectMembership.objects.create(project=project, user=user, role=role)
    except IntegrityError:
        raise MembershipConflict(f"{username} is already a member of {project.name}") from None


def membership_remove(*, membership: ProjectMembership) -> None:
    """Remove a member. Their answers stay; an item they still hold expires with its lease."""
    membership.delete()


def membership_pause(*, membership: ProjectMembership, by: Any) -> ProjectMembership:
    """Stop serving items to an annotator until a researcher resumes them."""
    membership.flagged = True
    membership.flag_reason = f"paused by {getattr(by, 'username', 'a researcher')}"[:300]
    membership.save(update_fields=["flagged", "flag_reason"])
    return membership


def membership_resume(*, membership: ProjectMembership) -> ProjectMembership:
    """Clear a pause or a quality flag (qualification is left as it was)."""
    membership.flagged = False
    membership.flag_reason = ""
    membership.save(update_fields=["flagged", "flag_reason"])
    return membership
