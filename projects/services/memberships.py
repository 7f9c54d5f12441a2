"""Who works on which project: add and remove annotators and researchers, pause an annotator
(they get no more items until resumed). A pause is a flag with the reason "paused by …", so
the annotation service's existing "flagged annotators get no items" rule applies.

Removing or pausing a member releases the items they hold at once: the app that owns leases
(``annotate``) registers its release function with :func:`membership_lease_releaser_register`
(the kernel imports no other app), and it runs in the same transaction as the change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from projects import permissions
from projects.models import MEMBER_ROLES, PAUSE_REASON_PREFIX, Project, ProjectMembership

# (project_id, user_id) -> number of leases released
LeaseReleaser = Callable[[int, int], int]
_RELEASERS: list[LeaseReleaser] = []


def membership_lease_releaser_register(releaser: LeaseReleaser) -> None:
    if releaser not in _RELEASERS:
        _RELEASERS.append(releaser)


def _release_leases(membership: ProjectMembership) -> int:
    return sum(release(membership.project_id, membership.user_id) for release in _RELEASERS)


class MembershipConflict(Exception):
    """The membership already exists (409)."""


def _role_ok(user: Any, role: str) -> bool:
    if role == permissions.RESEARCHER:
        return permissions.is_researcher(user)
    # researchers and admins may annotate too, as annotator members (only those answer items)
    return permissions.is_annotator(user) or permissions.is_researcher(user)


def membership_add(*, project: Project, username: str, role: str = "annotator") -> ProjectMembership:
    """Make ``username`` a member of ``project`` as ``role``. The account must hold that role
    (the ``annotator`` or ``researcher`` group; a researcher or admin may also be added as an
    annotator — only annotator members answer items — and then starts qualified: check items
    screen crowd annotators, not the people who wrote them). Raises ``ValidationError`` with
    field names (``username``, ``role``) and :class:`MembershipConflict` when already a member."""
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
            trusted = role == permissions.ANNOTATOR and permissions.is_researcher(user)
            return ProjectMembership.objects.create(
                project=project, user=user, role=role, qualified_at=timezone.now() if trusted else None
            )
    except IntegrityError:
        raise MembershipConflict(f"{username} is already a member of {project.name}") from None


def membership_remove(*, membership: ProjectMembership) -> int:
    """Remove a member. Their answers so far stay; the items they hold go back to the pool at
    once (returns how many), and every later action on those leases is refused."""
    with transaction.atomic():
        released = _release_leases(membership)
        membership.delete()
    return released


def membership_pause(*, membership: ProjectMembership, by: Any) -> ProjectMembership:
    """Stop serving items to an annotator until a researcher resumes them; the items they hold
    go back to the pool at once."""
    with transaction.atomic():
        membership.flagged = True
        membership.flag_reason = f"{PAUSE_REASON_PREFIX} {getattr(by, 'username', 'a researcher')}"[:300]
        membership.save(update_fields=["flagged", "flag_reason"])
        _release_leases(membership)
    return membership


def membership_resume(*, membership: ProjectMembership) -> ProjectMembership:
    """Clear a pause or a quality flag.

    A pause is simply lifted (qualification stays as it was). A quality flag (failed
    qualification, or gold accuracy too low) starts a fresh qualification window: the member
    is no longer qualified, and only check answers given from now on decide again."""
    fields: dict[str, Any] = {"flagged": False, "flag_reason": ""}
    if membership.flagged and not membership.paused:
        fields.update(qualified_at=None, gold_window_start=timezone.now(), gold_answered=0, gold_correct=0)
    ProjectMembership.objects.filter(pk=membership.pk).update(**fields)
    membership.refresh_from_db()
    return membership
