"""Rename project labels called ``unclear`` (any case, after trimming) in projects created before
``projects.validators.validate_labels`` refused that name (commit 7475ea8).

``unclear`` is the "Unclear / invalid" answer every item offers besides the project's labels.
A project that also had a label of that name offered it twice (or as "Unclear" beside
"unclear"), and the annotation-quality page, its API and the project dashboard failed on the
repeated choice. New projects cannot get such a label; this gives old ones a name that new ones
could have: ``<name>_label`` (``_label_2``, … when taken), cut to the 64 characters a label has.

What refers to the label by its row (originals' and candidates' labels, gold labels, overrides,
aggregates) keeps pointing at it. What holds its *name* is renamed with it on the project's
rows: answers (``choice``, ``shown_choice``), item results and gold answers, and the choice
orders stored on leases and answers. A label spelt exactly ``unclear`` could not be told apart
from the reserved answer in what annotators sent (both were stored as ``unclear``): those
answers stay the reserved answer, as aggregation already read them; only the label's own place
in stored choice orders (the first of the two ``unclear`` entries) and the gold answers of its
check items (``gold_choice`` comes from the candidate's gold label) take the new name.

Not reversible as such (the old name is the problem); reversing is a no-op.
"""

from __future__ import annotations

from django.db import migrations

RESERVED = "unclear"
NAME_MAX = 64


def _is_reserved(name: str) -> bool:
    return name.strip().casefold() == RESERVED


def _new_name(old: str, taken: set[str]) -> str:
    base = f"{old.strip()}_label"[:NAME_MAX]
    name, n = base, 2
    while name in taken or _is_reserved(name):
        suffix = f"_{n}"
        name, n = base[: NAME_MAX - len(suffix)] + suffix, n + 1
    return name


def _renamed_order(order, old: str, new: str):
    """The stored choice order with the label's entry renamed (a list of names), or None when
    unchanged. ``old == 'unclear'``: the label's entry is the first of two ``unclear``s."""
    if not isinstance(order, list) or old not in order:
        return None
    if old == RESERVED:
        if order.count(RESERVED) < 2:
            return None
        i = order.index(RESERVED)
        return [*order[:i], new, *order[i + 1 :]]
    return [new if c == old else c for c in order]


def rename_reserved_labels(apps, schema_editor):
    Label = apps.get_model("projects", "Label")
    Item = apps.get_model("annotate", "Item")
    Assignment = apps.get_model("annotate", "Assignment")
    Annotation = apps.get_model("annotate", "Annotation")
    for label in Label.objects.filter(name__icontains=RESERVED).order_by("pk"):
        if not _is_reserved(label.name):
            continue
        old = label.name
        taken = set(Label.objects.filter(project_id=label.project_id).values_list("name", flat=True))
        new = _new_name(old, taken)
        label.name = new
        label.save(update_fields=["name"])
        project = label.project_id
        Item.objects.filter(project_id=project, gold_choice=old).update(gold_choice=new)
        if old != RESERVED:  # the answers name the label itself, not the reserved answer
            Item.objects.filter(project_id=project, result=old).update(result=new)
            Annotation.objects.filter(project_id=project, choice=old).update(choice=new)
            Annotation.objects.filter(project_id=project, shown_choice=old).update(shown_choice=new)
        for model in (Assignment, Annotation):
            for pk, order in model.objects.filter(project_id=project).values_list("pk", "display_order").iterator():
                renamed = _renamed_order(order, old, new)
                if renamed is not None:
                    model.objects.filter(pk=pk).update(display_order=renamed)


class Migration(migrations.Migration):
    dependencies = [
        ("annotate", "0004_kernel_moved"),
        ("projects", "0009_job_kind_task_model"),
    ]

    operations = [migrations.RunPython(rename_reserved_labels, migrations.RunPython.noop)]
