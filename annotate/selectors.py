"""Reads of the annotation workflow: visibility, item payloads, progress, the annotation-quality page."""

from __future__ import annotations

import math
import os
import statistics
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Avg, Count, Exists, F, OuterRef, Q, QuerySet, Value
from django.urls import reverse

from annotate import kinds, open_for
from annotate.kinds.changes import changed_segments
from annotate.ml import agreement
from annotate.models import Annotation, Assignment, Item
from projects import permissions, states
from projects.formats.reading import below
from projects.models import Label, Project, ProjectMembership
from projects.selectors import projects_visible_to
from projects.services.imports import image_root

# What a member who may not annotate is told (the item page and the API say the same).
PAUSED_MESSAGE = "Your work on this project is paused by the project's researchers. Your answers so far are kept."
REMOVED_MESSAGE = "You are no longer a member of this project."
NO_ROLE_MESSAGE = "Your account no longer has the annotator role; an admin can give it back."
# Only annotator members take items: every answer counts toward an item's overlap k and the
# agreement figures, so a researcher's or admin's answers would sit among the annotators'.
NOT_ANNOTATOR_MESSAGE = (
    "Only the project's annotators take items here: every answer counts toward an item's overlap "
    "and agreement. To annotate yourself, add your account as an annotator on the project's members page."
)


def _cfg(key: str) -> Any:
    counterpart: Mapping[str, Any] = settings.COUNTERPART  # a TypedDict: a str key needs this view
    return counterpart[key]


def undo_window() -> timedelta:
    """How long after answering an annotator may take the answer back (``UNDO_SECONDS``)."""
    return timedelta(seconds=int(_cfg("UNDO_SECONDS")))


def qualification_required() -> int:
    """Check answers needed before qualification is decided (``COUNTERPART_QUALIFICATION_GOLD``)."""
    return max(0, int(_cfg("QUALIFICATION_GOLD")))


def gold_window_answers(*, membership: ProjectMembership) -> Any:
    """The member's check answers that count now (oldest first): those given since their
    qualification window opened (``gold_window_start``, set when a researcher clears a flag)."""
    qs = Annotation.objects.filter(project_id=membership.project_id, annotator_id=membership.user_id, is_gold=True)
    if membership.gold_window_start is not None:
        qs = qs.filter(created_at__gte=membership.gold_window_start)
    return qs.order_by("created_at", "id")


def skipped_checks_for(*, project_id: int, user_id: int) -> QuerySet[Assignment]:
    """The check items this annotator skipped, or held until the lease ran out (an idle page;
    held when paused or when the role was taken away), that may be served to them again while
    they qualify (issue 32.5: six skips of check items locked an annotator out; one idle check
    item did on a project with just enough), oldest first, so that skipping again walks through
    them all. Their expected answer was never shown (a skip or an expiry gets no feedback), so
    asking again tests labelling, not memory."""
    return Assignment.objects.filter(
        project_id=project_id,
        annotator_id=user_id,
        status__in=("skipped", "expired"),
        item__is_gold=True,
        item__status="open",
        item__taken__lt=F("item__k"),
    ).order_by("finished_at", "id")


@dataclass(frozen=True)
class QualificationDecision:
    """What ``membership_settle_qualification`` would decide now: ``answers`` (correct or not,
    the first ``required`` of the window) and the ``required`` count the rules apply."""

    answers: list[bool]
    required: int


def qualification_decision(*, membership: ProjectMembership, out_of_gold: bool) -> QualificationDecision:
    """The qualification rule, read-only (the settle writes its outcome; the home page asks it
    whether an undecided member would be served): nothing is decided before
    ``QUALIFICATION_GOLD`` check answers are in; out of check items, a project without any
    qualifies everyone and a first window with fewer check items in all than the minimum
    decides on what was answered."""
    required = qualification_required()
    answers = [
        bool(a)
        for a in gold_window_answers(membership=membership).values_list("correct", flat=True)[: max(required, 1)]
    ]
    if out_of_gold and len(answers) < required:
        gold_total = Item.objects.filter(project_id=membership.project_id, is_gold=True).count()
        if gold_total == 0:
            required = 0
        elif membership.gold_window_start is None and gold_total < required:
            required = len(answers)
    return QualificationDecision(answers, required)


# --- visibility -----------------------------------------------------------------------------


def project_annotatable_by(*, project_id: int, user: Any) -> Project | None:
    """The project, if ``user`` may annotate it (a member, or a researcher/admin)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return None
    return project if permissions.can_annotate(user, project) else None


def membership_for(*, project: Project, user: Any) -> ProjectMembership | None:
    return ProjectMembership.objects.filter(project=project, user=user).first()


# --- item payloads --------------------------------------------------------------------------


def image_url(path: str) -> str:
    """The URL an annotator's browser loads ``path`` from: an absolute path (an imported
    image) inside the image root -> ``/images/<relative path>`` (served to signed-in users);
    a relative path (a generated image under ``MEDIA_ROOT``) -> ``MEDIA_URL``; an http(s) URL
    as it is. An absolute path outside the image root is never sent ("")."""
    if not path:
        return ""
    if path.startswith(("http://", "https://")):
        return path
    if os.path.isabs(path):
        root = os.path.realpath(image_root())
        real = os.path.realpath(path)
        if not below(real, root):
            return ""
        return reverse("image-file", kwargs={"path": os.path.relpath(real, root).replace(os.sep, "/")})
    return "/" + settings.MEDIA_URL.strip("/") + "/" + path


def image_missing(url: str) -> bool:
    """Whether the image at ``url`` (as ``image_url`` gives it) cannot be shown: no URL (no
    image, or a path outside the image root), or a file of ours (``/images/…``, ``MEDIA_URL``)
    that is not there. An http(s) URL is the browser's to load."""
    if not url:
        return True
    if url.startswith(("http://", "https://")):
        return False
    images = reverse("image-file", kwargs={"path": "x"})[:-1]
    media = "/" + settings.MEDIA_URL.strip("/") + "/"
    if url.startswith(images):
        root, rel = image_root(), url[len(images) :]
    elif url.startswith(media):
        root, rel = str(settings.MEDIA_ROOT), url[len(media) :]
    else:
        return False
    return not os.path.isfile(os.path.join(root, unquote(rel)))


def _marked(fields: list[tuple[str, Any]], others: list[tuple[str, Any]]) -> list[tuple[str, list[tuple[str, bool]]]]:
    """Each field of ``fields`` as ``changed_segments`` against the same field of ``others``
    (a field the other side lacks is not marked: nothing to compare it with)."""
    other = dict(others)
    return [
        (name, changed_segments(str(value), str(other[name])) if name in other else [(str(value), False)])
        for name, value in fields
    ]


@dataclass(frozen=True)
class ItemView:
    """Everything the annotator page and the API show for one lease (blind: no labels, no
    other answers, no model output, not even whether it is a check item). What is shown
    depends on the item's kind (``annotate.kinds``)."""

    assignment: Assignment
    kind: str
    body: kinds.ItemBody
    choices: list[str]  # what may be submitted, in display order
    choice_labels: list[str]  # how each choice is shown

    @property
    def template(self) -> str:
        """The partial that renders this kind's item body."""
        return kinds.kind_named(self.kind).template

    @property
    def fields(self) -> list[tuple[str, Any]]:  # the counterfactual (task-label items)
        return self.body.fields

    @property
    def original_fields(self) -> list[tuple[str, Any]]:
        return self.body.original_fields

    @property
    def marked_fields(self) -> list[tuple[str, list[tuple[str, bool]]]]:
        """The counterfactual's fields as runs, its words the original lacks flagged (marked on
        the page while the original is shown)."""
        return _marked(self.body.fields, self.body.original_fields)

    @property
    def marked_original_fields(self) -> list[tuple[str, list[tuple[str, bool]]]]:
        """The original's fields as runs, its words the counterfactual dropped or replaced flagged."""
        return _marked(self.body.original_fields, self.body.fields)

    @property
    def image(self) -> str:  # caption items: the image being judged
        return self.body.image

    @property
    def image_missing(self) -> bool:  # caption items: the page shows a placeholder instead
        return image_missing(self.body.image)

    @property
    def captions(self) -> list[str]:  # caption items: texts in display order
        return self.body.captions

    @property
    def choice_pairs(self) -> list[tuple[str, str]]:
        return list(zip(self.choices, self.choice_labels, strict=True))

    def as_json(self) -> dict[str, Any]:
        return {
            "assignment": self.assignment.pk,
            "item": {"id": self.assignment.item_id, "kind": self.kind, **self.body.as_json()},
            "choices": self.choices,
            "expires_at": self.assignment.expires_at.isoformat(),
        }


def _source(item: Item) -> kinds.ItemSource:
    cand, example = item.candidate, item.candidate.example
    return kinds.ItemSource(
        side=item.side,
        text_fields=list(item.project.text_fields or []),
        fields=cand.fields,
        image=cand.image,
        original_fields=example.fields,
        original_image=example.image,
    )


def item_view_of(*, assignment: Assignment, shown: tuple[Any, ...], text_fields: list[str]) -> ItemView:
    """``item_view`` from what the lease statement already read (``shown`` = kind, side,
    candidate fields and image, example fields and image): no query."""
    kind_name, side, c_fields, c_image, e_fields, e_image = shown
    kind = kinds.kind_named(kind_name)
    order = list(assignment.display_order)
    offered = kind.offered(order)
    source = kinds.ItemSource(
        side=side,
        text_fields=text_fields,
        fields=c_fields,
        image=c_image,
        original_fields=e_fields,
        original_image=e_image,
    )
    body = kind.body(source, order, image_url)
    return ItemView(assignment, kind_name, body, offered, kind.choice_labels(offered))


def item_view(*, assignment: Assignment) -> ItemView:
    item = Item.objects.select_related("candidate__example", "project").get(pk=assignment.item_id)
    kind = kinds.kind_named(item.kind)
    order = list(assignment.display_order)
    offered = kind.offered(order)
    body = kind.body(_source(item), order, image_url)
    return ItemView(assignment, item.kind, body, offered, kind.choice_labels(offered))


def annotator_progress(*, project: Project, user: Any) -> dict[str, int]:
    """The annotator's own counts: answered and skipped (an index range on (annotator,
    project, status)) and items left (``items_left_for``), read in one statement: this runs on
    every answer of the annotator page (issue 33)."""
    with connection.cursor() as cur:
        cur.execute(_PROGRESS, {"pid": project.pk, "uid": user.pk, "cap": ITEMS_LEFT_CAP + 1})
        row = cur.fetchone()
    answered, skipped, left = row if row else (0, 0, 0)
    return {"answered": int(answered), "skipped": int(skipped), "left": int(left)}


ITEMS_LEFT_CAP = 1000


_OWN_COUNT = (
    "(SELECT COUNT(*) FROM annotate_assignment a WHERE a.annotator_id = %(uid)s AND a.project_id = %(pid)s "
    "AND a.status = '{status}')"
)
_PROGRESS = (
    f"SELECT {_OWN_COUNT.format(status='submitted')}, {_OWN_COUNT.format(status='skipped')}, ({open_for.ITEMS_LEFT})"
)


def items_left_for(*, project: Project, user: Any) -> int:
    """Open items that still want answers and that this annotator has not had yet: exactly
    the items next-item may serve them (the same ``annotate.open_for.OPEN_FOR`` predicate as
    the pick), capped at ``ITEMS_LEFT_CAP`` + 1 so the count stays an index range, however
    large the pool (the page shows "1000+"). Check items are not counted: they are served on
    top, and answering one does not count "items left" down."""
    with connection.cursor() as cur:
        cur.execute(open_for.ITEMS_LEFT, {"pid": project.pk, "uid": user.pk, "cap": ITEMS_LEFT_CAP + 1})
        row = cur.fetchone()
    return int(row[0]) if row else 0


def next_item_for(*, project_id: int, user_id: int) -> int | None:
    """The item next-item would serve ``user_id`` now (read-only: no lease taken, no row
    locked), or None when nothing is left for them: the very statement the claim runs."""
    with connection.cursor() as cur:
        cur.execute(open_for.pick_sql(gold=False, lock=False), {"pid": project_id, "uid": user_id})
        row = cur.fetchone()
    return int(row[0]) if row and row[0] is not None else None


def annotation_undoable(annotation: Annotation) -> bool:
    """Whether ``annotation`` can still be undone: its item is not aggregated yet and the undo
    window (``UNDO_SECONDS``) has not passed (the rules ``annotation_undo`` enforces)."""
    from django.utils import timezone

    return annotation.item.status == "open" and timezone.now() - annotation.created_at <= undo_window()


def last_undoable(*, project: Project, user: Any) -> Annotation | None:
    """The annotator's most recent answer if it can still be undone."""
    ann = (
        Annotation.objects.filter(project=project, annotator=user)
        .select_related("item")
        .order_by("-created_at", "-id")
        .first()
    )
    if ann is None or not annotation_undoable(ann):
        return None
    return ann


@dataclass(frozen=True)
class AnsweredView:
    """An item this annotator already answered, as the page shows it when they come back to it
    (browser Back / Forward, issue 20.11): the item, their answer as they pressed it, and
    whether it can still be undone."""

    view: ItemView
    shown_choice: str
    shown_label: str
    undoable: bool


def answered_item(*, project: Project, user: Any, assignment_id: int) -> AnsweredView | None:
    """``user``'s answered assignment ``assignment_id`` on ``project``, or None (not theirs, not
    on this project, or not answered: the page then serves the next item as usual)."""
    a = Assignment.objects.filter(pk=assignment_id, project=project, annotator=user, status="submitted").first()
    if a is None:
        return None
    ann = Annotation.objects.select_related("item").filter(assignment=a).first()
    if ann is None:
        return None
    view = item_view(assignment=a)
    labels = dict(view.choice_pairs)
    shown_label = labels.get(ann.shown_choice, ann.shown_choice)
    return AnsweredView(view, ann.shown_choice, shown_label, annotation_undoable(ann))


NOTHING_NOW = "Nothing can be served to you on this project right now: every item that wants answers has yours."
WAITING_CHECKS = (
    "You have answered every check item there is for you, fewer than the {required} needed to qualify; "
    "the project's researchers have to add check items before you can go on."
)


def serving_for(*, project: Project, user: Any, state: MemberState | None = None) -> str:
    """Why next-item would serve ``user`` nothing on ``project`` now ('' when it would serve
    something): the same steps as ``annotate.services.assignments.lease_next``, read-only —
    their live lease; while they qualify an unseen check item (the same pick), a check item they
    skipped (``skipped_checks_for``) or, out of check items, the qualification decision
    (``qualification_decision``); then the next-item pick itself (``next_item_for``). The home
    page offers Start only when this is ''."""
    from django.utils import timezone

    state = state or member_state(project=project, user=user)
    if state.locked or state.state == "researcher":
        return state.message
    if Assignment.objects.filter(
        project=project, annotator=user, status="leased", expires_at__gt=timezone.now()
    ).exists():
        return ""
    m = ProjectMembership.objects.filter(project=project, user=user).first()
    if m is not None and m.qualified_at is None and qualification_required() > 0:
        with connection.cursor() as cur:
            cur.execute(open_for.pick_sql(gold=True, lock=False), {"pid": project.pk, "uid": user.pk})
            if cur.fetchone() is not None:
                return ""
        if skipped_checks_for(project_id=project.pk, user_id=user.pk).exists():
            return ""
        from annotate.ml import policy

        d = qualification_decision(membership=m, out_of_gold=True)
        status = policy.qualification_status(
            d.answers, required=d.required, min_accuracy=float(_cfg("GOLD_MIN_ACCURACY"))
        )
        if status == policy.QualificationStatus.FAILED:
            return "Your answers on the check items did not meet the project's threshold."
        if status != policy.QualificationStatus.PASSED:
            return WAITING_CHECKS.format(required=qualification_required())
    if next_item_for(project_id=project.pk, user_id=user.pk) is None:
        return NOTHING_NOW
    return ""


def annotator_home(*, user: Any) -> list[dict[str, Any]]:
    """Projects on the annotator's home page with their own progress, and ``blocked``: why
    nothing would be served now ('' when Start can serve something; ``serving_for``)."""
    out = []
    for p in projects_visible_to(user=user).order_by("name"):
        state = member_state(project=p, user=user)
        prog = annotator_progress(project=p, user=user)
        if state.locked:
            prog["left"] = 0  # nothing is served while locked: do not promise items
        out.append({"project": p, "member": state, "blocked": serving_for(project=p, user=user, state=state), **prog})
    return out


# --- who can still answer (issue 18.10) ------------------------------------------------------


def eligible_annotators(*, project_id: Any, qualified: bool) -> QuerySet[ProjectMembership]:
    """Annotator memberships that can be served items: active account that still holds a role
    (``permissions.role_held``: one taken out of the annotator group is served nothing), not
    paused or flagged; with ``qualified``, also past qualification (or no qualification
    configured). Without it, members still in qualification count too (they may yet qualify).
    ``project_id`` may be an ``OuterRef``."""
    qs = ProjectMembership.objects.filter(
        permissions.role_held(),
        project_id=project_id,
        role=permissions.ANNOTATOR,
        flagged=False,
        user__is_active=True,
    )
    if qualified and int(settings.COUNTERPART["QUALIFICATION_GOLD"]) > 0:
        qs = qs.filter(qualified_at__isnull=False)
    return qs


def _not_had(item_ref: Any) -> Any:
    """Memberships whose user never had an assignment on the item (``item_ref``)."""
    return ~Exists(Assignment.objects.filter(item_id=item_ref, annotator_id=OuterRef("user_id")))


def annotators_available_for(*, item_id: int, project_id: int, qualified: bool) -> int:
    """Eligible annotators who have not had ``item_id`` yet (nobody gets an item twice)."""
    return eligible_annotators(project_id=project_id, qualified=qualified).filter(_not_had(item_id)).count()


def items_waiting_for_annotators(*, project: Project) -> QuerySet[Item]:
    """Open real items that can never get their answers: fewer eligible annotators (active, not
    paused or flagged, qualified or still in qualification) who have not had the item than the
    item still has free slots (``k − taken``). Annotated with ``available``. A derived state:
    it goes away by itself when annotators are added or resumed, or by
    ``items_settle_waiting`` (the one-click remedy on the annotation-quality page).

    One grouped join of the open items with the eligible members' assignments (the members are
    a handful of ids read first): ``available`` = eligible members − those of them who had the
    item. Not a count per item of the members with a per-member ``NOT EXISTS``, which cost
    items × members index probes (docs/workspace.md, "Measured: every researcher page")."""
    eligible = list(eligible_annotators(project_id=project.pk, qualified=False).values_list("user_id", flat=True))
    had: Any = Value(0)  # nobody eligible: an empty IN () would make Django drop every row
    if eligible:
        had = Count("assignments__annotator_id", filter=Q(assignments__annotator_id__in=eligible), distinct=True)
    return (
        Item.objects.filter(project=project, status="open", is_gold=False, taken__lt=F("k"))
        .annotate(available=Value(len(eligible)) - had)
        .filter(available__lt=F("k") - F("taken"))
        .order_by("id")
    )


def items_waiting_summary(*, project: Project, sample: int = 20) -> dict[str, Any]:
    """Count and a few of the items waiting for annotators (the annotation-quality page, the API, warnings)."""
    qs = items_waiting_for_annotators(project=project)
    columns = ("id", "candidate__external_id", "side", "k", "taken", "done", "available")
    rows = list(qs.values(*columns)[: max(sample, 0)])  # "available": an annotation
    return {
        "count": qs.count() if len(rows) >= sample else len(rows),
        "items": rows,
        "eligible_annotators": eligible_annotators(project_id=project.pk, qualified=False).count(),
        "remedy_url": reverse("annotate-waiting", kwargs={"project_id": project.pk}),  # POST
        "page_url": reverse("annotate-dashboard", kwargs={"project_id": project.pk}) + "#waiting",
    }


# --- check items a qualification window still needs (issue 25.3) ----------------------------

# candidates that count toward a project (routing's budget, free check items)
LIVE_STATES = [states.POOLED, states.ROUTED, states.HUMAN_LABELED, states.AUTO_LABELED, states.ABSTAINED]


def free_gold_candidates(*, project: Project) -> list[int]:
    """Candidates with a known answer (``gold_label``) that are not an item yet and whose answer
    the item kind can ask for: what new check items can be made of (routing draws from these)."""
    labels = list(project.labels.values_list("name", flat=True))
    allowed = set(kinds.kind_for_task(project.task).gold_answers(labels))
    used = set(Item.objects.filter(project=project).values_list("candidate_id", flat=True))
    rows = (
        project.candidates.filter(gold_label__isnull=False, state__in=LIVE_STATES)
        .order_by("id")
        .values_list("id", "gold_label__name")
    )
    return [cid for cid, name in rows if cid not in used and name in allowed]


@dataclass(frozen=True)
class CheckShortfall:
    """Check items missing for members in qualification to finish their window: ``needed`` is
    how many new check items serve them all (every member may answer each new one), ``members``
    who waits for how many, ``free_gold`` how many pairs with a known answer are free to make
    them from (``needed - free_gold`` more must be imported)."""

    needed: int
    members: list[tuple[str, int]]
    free_gold: int

    @property
    def to_import(self) -> int:
        return max(0, self.needed - self.free_gold)


def check_items_shortfall(*, project: Project) -> CheckShortfall:
    """How many check items the project lacks so that every annotator still in qualification
    (after a researcher cleared their flag, a fresh window) can answer the
    ``QUALIFICATION_GOLD`` check items it needs. A fresh window counts only check items the
    member has never had: they saw the expected answers of the old ones as feedback, so reusing
    them would test memory, not labelling. Mirrors ``membership_settle_qualification``: a project
    without check items, or one with fewer than the minimum in all during a first window,
    decides on what there is and waits for nothing."""
    required = qualification_required()
    gold_total = Item.objects.filter(project=project, is_gold=True).count()
    out: list[tuple[str, int]] = []
    if required > 0 and gold_total > 0:
        members = eligible_annotators(project_id=project.pk, qualified=False).filter(qualified_at__isnull=True)
        for m in members.select_related("user"):
            if m.gold_window_start is None and gold_total < required:
                continue
            answered = gold_window_answers(membership=m)[:required].count()
            unseen = (
                Item.objects.filter(project=project, is_gold=True, status="open", taken__lt=F("k"))
                .exclude(assignments__annotator_id=m.user_id)
                .values("id")[:required]
                .count()
            )
            skipped = skipped_checks_for(project_id=project.pk, user_id=m.user_id)[:required].count()
            need = required - answered - unseen - skipped
            if need > 0:
                out.append((m.user.username, need))
    needed = max((n for _, n in out), default=0)
    free = len(free_gold_candidates(project=project)) if needed else 0
    return CheckShortfall(needed=needed, members=out, free_gold=free)


# --- qualification, as the annotator sees it (issue 18.11) ----------------------------------


@dataclass(frozen=True)
class CheckFeedback:
    """One check item the annotator got wrong: what they said, what was expected and why."""

    fields: list[tuple[str, Any]]
    image: str
    answered: str
    expected: str
    explanation: str


@dataclass(frozen=True)
class MemberState:
    """Where a member stands on a project: ``state`` is ``ok``, ``qualifying``, ``paused``,
    ``flagged``, ``removed`` or ``researcher`` (a researcher or admin without an annotator
    membership: served nothing, ``NOT_ANNOTATOR_MESSAGE``)."""

    state: str
    message: str
    required: int
    answered: int
    correct: int
    feedback: list[CheckFeedback]

    @property
    def locked(self) -> bool:
        return self.state in ("paused", "flagged", "removed")


def qualification_feedback(*, membership: ProjectMembership, first: int | None = None) -> list[CheckFeedback]:
    """The member's wrong check answers in their current qualification window (only among the
    ``first`` answers when given: the qualification itself), with the expected answer and its
    explanation (the pair's ``meta.gold_explanation``), as MTurk qualification feedback does.
    Shown to that annotator only (never anyone else's answers)."""
    window = gold_window_answers(membership=membership)
    if first is not None:
        window = window.filter(pk__in=list(window.values_list("pk", flat=True)[:first]))
    wrong = window.filter(correct=False).select_related("item__candidate__example", "item__project")[:50]
    out = []
    for ann in wrong:
        item, cand = ann.item, ann.item.candidate
        kind, source = kinds.kind_named(item.kind), _source(item)
        fields = kinds.ordered_fields(cand.fields, source.text_fields)
        explanation = (cand.meta or {}).get("gold_explanation") if isinstance(cand.meta, dict) else None
        out.append(
            CheckFeedback(
                fields=fields,
                image=kind.feedback_image(source, image_url),
                answered=kind.choice_text(ann.choice, source),
                expected=kind.choice_text(item.gold_choice, source),
                explanation=str(explanation) if explanation else "",
            )
        )
    return out


def member_state(*, project: Project, user: Any) -> MemberState:
    """The member's standing on ``project`` for the annotator's pages (home, item page)."""
    required = qualification_required()
    m = ProjectMembership.objects.filter(project=project, user=user).first()
    if m is None or m.role != permissions.ANNOTATOR:
        if m is not None or permissions.is_researcher(user):
            return MemberState("researcher", NOT_ANNOTATOR_MESSAGE, required, 0, 0, [])
        return MemberState("removed", REMOVED_MESSAGE, required, 0, 0, [])
    if m.paused:
        return MemberState("paused", PAUSED_MESSAGE, required, 0, 0, [])
    answers = [bool(c) for c in gold_window_answers(membership=m).values_list("correct", flat=True)[: max(required, 1)]]
    answered, correct = (min(len(answers), required), sum(answers[:required])) if required else (0, 0)
    if m.flagged:
        return MemberState(
            "flagged",
            f"Your answers on the check items did not meet the project's threshold ({m.flag_reason}). "
            "A researcher has to review them before you can go on.",
            required,
            answered,
            correct,
            qualification_feedback(membership=m),
        )
    if m.qualified_at is None and required > 0:
        return MemberState(
            "qualifying",
            f"First {required} check items decide whether you qualify: {answered} of {required} answered.",
            required,
            answered,
            correct,
            [],
        )
    feedback = qualification_feedback(membership=m, first=required) if required else []
    return MemberState("ok", "", required, answered, correct, feedback)


# --- the annotation-quality page -------------------------------------------------------------


def _nan_to_none(x: float | None) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return float(x)


def _score(s: agreement.AgreementScore) -> dict[str, Any]:
    return {
        "method": s.method,
        "formula": s.formula,
        "value": _nan_to_none(s.value),
        "n_items": s.n_items,
        "observed": _nan_to_none(s.observed),
        "expected": _nan_to_none(s.expected),
    }


SKIP_REASONS_SHOWN = 20


def skip_reasons_for(*, project: Project) -> list[dict[str, Any]]:
    """The reasons annotators gave when they skipped (trimmed, case kept as first written),
    most frequent first, with how many skips gave each: the first ``SKIP_REASONS_SHOWN``.
    Skips without a reason are counted in ``skips`` only."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for reason in (
        Assignment.objects.filter(project=project, status="skipped")
        .exclude(skip_reason="")
        .values_list("skip_reason", flat=True)
    ):
        text = " ".join(reason.split())
        if text:
            key = text.casefold()
            counts[key] += 1
            first.setdefault(key, text)
    return [{"reason": first[k], "skips": n} for k, n in counts.most_common(SKIP_REASONS_SHOWN)]


def project_quality(*, project: Project) -> dict[str, Any]:
    """Aggregation and agreement figures for the annotation-quality page and its API."""
    labels = list(Label.objects.filter(project=project).order_by("position").values_list("name", flat=True))
    kind = kinds.kind_for_task(project.task)
    allowed = kind.canonical_choices(labels)
    rows = list(
        Annotation.objects.filter(project=project).values_list(
            "item_id", "annotator_id", "choice", "is_gold", "correct", "duration_ms"
        )
    )
    real = [(i, a, c) for i, a, c, g, _, _ in rows if not g]
    gold_rows = [(a, bool(ok)) for _, a, _, g, ok, _ in rows if g]
    item_counts = dict(
        Item.objects.filter(project=project, is_gold=False)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    contested = Item.objects.filter(project=project, is_gold=False, status="complete", result="").count()
    unclear = Item.objects.filter(project=project, is_gold=False, status="complete", result=kinds.UNCLEAR).count()
    extended = Item.objects.filter(project=project, is_gold=False, k__gt=project.annotators_per_item).count()
    out: dict[str, Any] = {
        "project": {"id": project.pk, "name": project.name, "task": project.task, "k": project.annotators_per_item},
        "choices": allowed,
        "items": {
            "open": item_counts.get("open", 0),
            "complete": item_counts.get("complete", 0),
            "contested": contested,
            "unclear": unclear,
            "extended": extended,
            "gold": Item.objects.filter(project=project, is_gold=True).count(),
            "waiting_for_annotators": items_waiting_for_annotators(project=project).count(),
        },
        "annotations": len(real),
        "gold_annotations": len(gold_rows),
        "skips": Assignment.objects.filter(project=project, status="skipped").count(),
        "skip_reasons": skip_reasons_for(project=project),
        "expired_leases": Assignment.objects.filter(project=project, status="expired").count(),
        "formulas": {
            "fleiss": agreement.FLEISS_FORMULA,
            "fleiss_detail": agreement.FLEISS_DETAIL,
            "krippendorff": agreement.KRIPPENDORFF_FORMULA,
            "krippendorff_detail": agreement.KRIPPENDORFF_DETAIL,
            "wilson": agreement.WILSON_FORMULA,
            "majority_vote": agreement.MAJORITY_VOTE_DESCRIPTION,
            "dawid_skene": agreement.DAWID_SKENE_DESCRIPTION,
        },
        "agreement": None,
        "by_perturbation": [],
        "aggregation": None,
        "annotators": [],
    }
    User = get_user_model()
    members = {m.user_id: m for m in ProjectMembership.objects.filter(project=project)}
    # the annotators: annotator members, and anyone who answered (a researcher member who
    # annotates nothing is not an annotator "in qualification")
    annotator_ids = (
        {a for _, a, _ in real} | {a for a, _ in gold_rows} | {u for u, m in members.items() if m.role == "annotator"}
    )
    names = dict(User.objects.filter(pk__in=annotator_ids).values_list("id", "username"))

    mv: dict[Any, agreement.Aggregate] = {}
    ds_labels: dict[Any, str] = {}
    if real:
        out["agreement"] = {
            "fleiss_kappa": _score(agreement.fleiss_kappa(real, labels=allowed)),
            "krippendorff_alpha": _score(agreement.krippendorff_alpha(real, labels=allowed)),
        }
        # only the answered items (not every item of the pool: 6,897 rows and a join per request)
        answered = Annotation.objects.filter(project=project, is_gold=False).values("item_id")
        pert = dict(Item.objects.filter(pk__in=answered).values_list("id", "candidate__perturbation"))
        key: dict[Hashable, Hashable] = {i: (p or "(none)") for i, p in pert.items()}
        for group, g in sorted(agreement.agreement_by(real, key, labels=allowed).items(), key=lambda kv: str(kv[0])):
            out["by_perturbation"].append(
                {
                    "perturbation": group,
                    "items": g.n_items,
                    "annotations": g.n_annotations,
                    "fleiss_kappa": _score(g.fleiss_kappa),
                    "krippendorff_alpha": _score(g.krippendorff_alpha),
                }
            )
        mv = agreement.majority_vote(real, labels=allowed, tie_break="abstain")
        gold_items = dict(Item.objects.filter(project=project, is_gold=True).values_list("id", "gold_choice"))
        ds_input = real + [(i, a, c) for i, a, c, g, _, _ in rows if g and c in allowed]
        try:
            # numpy's EM (the same labels as crowd-kit's, tests/annotate/test_agreement.py): this runs
            # in the page's request, and importing crowd-kit (pandas, scipy.stats, nltk) cost the
            # first one of a process 3-4 s
            ds = agreement.dawid_skene(
                ds_input, labels=allowed, gold={i: c for i, c in gold_items.items() if c in allowed}, engine="numpy"
            )
            ds_labels = {i: lab for i, lab in ds.label_of.items() if i not in gold_items}
            # only where the majority vote has a label: a tie has nothing to disagree with (it
            # is counted in majority_ties; counting it here too doubled every tie as a disagreement)
            differ = sum(1 for i, lab in ds_labels.items() if mv.get(i) and mv[i].label not in (None, lab))
            out["aggregation"] = {
                "items": len(mv),
                "majority_ties": sum(1 for a in mv.values() if a.label is None),
                "dawid_skene_differs": differ,
                "dawid_skene_engine": ds.engine,
                "dawid_skene_iterations": ds.iterations,
                "priors": ds.priors,
            }
        except Exception as exc:  # noqa: BLE001 - a numerical failure must not take the page down
            out["aggregation"] = {"items": len(mv), "error": f"Dawid–Skene failed: {exc}"}
    gold_acc = agreement.gold_accuracy(gold_rows) if gold_rows else {}
    # Agreement with an aggregate only means something on items someone else answered too:
    # an annotator alone on an item always "agrees" with the majority of one.
    per_item = Counter(i for i, _, _ in real)
    shared = [r for r in real if per_item[r[0]] >= 2]
    mv_agree = agreement.agreement_with_aggregate(shared, mv) if shared else {}
    ds_agree = agreement.agreement_with_aggregate(shared, ds_labels) if shared and ds_labels else {}
    per_ann: dict[Any, Counter[str]] = defaultdict(Counter)
    durations: dict[Any, list[int]] = defaultdict(list)
    for _, a, _, is_gold, _, d in rows:
        per_ann[a]["gold" if is_gold else "real"] += 1
        if d is not None:
            durations[a].append(d)
    for a in sorted(annotator_ids, key=lambda x: names.get(x, "")):
        m = members.get(a)
        acc = gold_acc.get(a)
        ds_ = durations.get(a, [])
        out["annotators"].append(
            {
                "id": a,
                "username": names.get(a, str(a)),
                "answers": per_ann[a]["real"],
                "gold_answers": per_ann[a]["gold"],
                "gold_accuracy": None
                if acc is None
                else {"accuracy": acc.accuracy, "ci_low": acc.ci_low, "ci_high": acc.ci_high, "n": acc.n},
                "agreement_majority": None if a not in mv_agree else mv_agree[a].rate,
                # the rates' n: this annotator's answers on items shared with others that the
                # aggregate labels (ties and items answered alone left out), not their answers
                "agreement_majority_n": mv_agree[a].n if a in mv_agree else 0,
                "agreement_dawid_skene": None if a not in ds_agree else ds_agree[a].rate,
                "agreement_dawid_skene_n": ds_agree[a].n if a in ds_agree else 0,
                # the median (the mean of the two middle values of an even count, rounded to
                # the ms), not the upper middle value: [1000, 3000] is 2000 ms, not 3000
                "median_ms": round(statistics.median(ds_)) if ds_ else None,
                "qualified": bool(m and (m.qualified_at or int(settings.COUNTERPART["QUALIFICATION_GOLD"]) == 0)),
                "flagged": bool(m and m.flagged),
                "flag_reason": m.flag_reason if m else "",
                "member": m is not None,
                "role": m.role if m else "",
                "membership_id": m.pk if m else None,
            }
        )
    if kind.summary_key:
        completed = Item.objects.filter(project=project, is_gold=False, status="complete")
        out[kind.summary_key] = kind.summarise(completed.values_list("candidate_id", "side", "result"))
    out["duration_ms_avg"] = _nan_to_none(
        Annotation.objects.filter(project=project, is_gold=False).aggregate(x=Avg("duration_ms"))["x"]
    )
    return out


def memberships_for(*, project: Project) -> QuerySet[ProjectMembership]:
    return ProjectMembership.objects.filter(project=project).select_related("user").order_by("user__username")


def member_candidates(*, project: Project) -> QuerySet[Any]:
    """Active annotator and researcher accounts not yet members of ``project``."""
    User = get_user_model()
    return (
        User.objects.filter(is_active=True, groups__name__in=[permissions.ANNOTATOR, permissions.RESEARCHER])
        .exclude(memberships__project=project)
        .distinct()
        .order_by("username")
    )


def annotator_candidates(*, project: Project) -> QuerySet[Any]:
    """Annotator accounts not yet members of ``project`` (for the researcher's add form)."""
    User = get_user_model()
    return (
        User.objects.filter(groups__name=permissions.ANNOTATOR)
        .exclude(memberships__project=project)
        .order_by("username")
    )


__all__ = [
    "AnsweredView",
    "CheckShortfall",
    "ItemView",
    "annotation_undoable",
    "annotator_candidates",
    "annotator_home",
    "annotator_progress",
    "annotators_available_for",
    "answered_item",
    "check_items_shortfall",
    "eligible_annotators",
    "free_gold_candidates",
    "image_url",
    "item_view",
    "item_view_of",
    "items_left_for",
    "items_waiting_for_annotators",
    "items_waiting_summary",
    "last_undoable",
    "member_state",
    "membership_for",
    "memberships_for",
    "next_item_for",
    "project_annotatable_by",
    "project_quality",
    "qualification_feedback",
]


@dataclass(frozen=True)
class OutsideAnswers:
    """A project's stored answers by researchers or admins who hold no annotator membership of
    it now: answers given before only annotator members could answer (commit 68d4e56)."""

    project: str
    by_user: dict[str, int]  # username -> answers
    on_open_items: int  # still counted toward k, waiting for the other answers
    on_closed_items: int  # already aggregated into a candidate's label
    candidates: list[int]  # the candidates of the closed items (for label overrides on the pair view)


def answers_outside_annotators(*, project: Project) -> OutsideAnswers:
    """Read-only: who these answers are and where they went (docs/annotation.md, "Answers
    stored before the rule"). A researcher who was an annotator member once and was removed
    looks the same (a removed membership leaves no row), so nothing is changed automatically."""
    members = ProjectMembership.objects.filter(project=project, role="annotator").values("user_id")
    outside = (
        Annotation.objects.filter(project=project)
        .exclude(annotator_id__in=members)
        .filter(Q(annotator__is_superuser=True) | Q(annotator__groups__name=permissions.RESEARCHER))
        .distinct()
    )
    by_user = Counter(outside.values_list("annotator__username", flat=True))
    closed = outside.exclude(item__status="open")
    return OutsideAnswers(
        project=project.name,
        by_user=dict(sorted(by_user.items())),
        on_open_items=outside.filter(item__status="open").count(),
        on_closed_items=closed.count(),
        candidates=sorted(set(closed.values_list("item__candidate_id", flat=True))),
    )
