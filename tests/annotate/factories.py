"""Small builders for annotation tests (projects with pooled candidates, users with roles)."""

from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from projects import permissions
from projects.models import Candidate, Example, Label, Project, ProjectMembership
from projects.services.projects import project_create

User = get_user_model()


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "pw-123456")

    @factory.post_generation
    def role(self, create: bool, extracted: str | None, **kwargs: Any) -> None:
        if extracted:
            group, _ = Group.objects.get_or_create(name=extracted)
            self.groups.add(group)
        self.save()


def annotator(project: Project | None = None, **kw: Any) -> Any:
    qualified_at = kw.pop("qualified_at", None)
    user = UserFactory(role=permissions.ANNOTATOR, **kw)
    if project is not None:
        ProjectMembership.objects.create(project=project, user=user, qualified_at=qualified_at)
    return user


def researcher(**kw: Any) -> Any:
    return UserFactory(role=permissions.RESEARCHER, **kw)


def login(user: Any) -> Client:
    """A test client logged in as ``user``."""
    c = Client()
    c.force_login(user)
    return c


def project_with_candidates(
    *,
    name: str = "p",
    task: str = "nli",
    n: int = 20,
    k: int = 3,
    gold: int = 0,
    generators: tuple[str, ...] = ("rules",),
    perturbations: tuple[str, ...] = ("negation", "insert"),
    confidences: bool = False,
) -> Project:
    """A project with ``n`` pooled candidates (and ``gold`` more with a gold label)."""
    project = project_create(name=name, task=task, annotators_per_item=k)
    labels = list(Label.objects.filter(project=project).order_by("position"))
    fields = project.text_fields
    examples = Example.objects.bulk_create(
        [
            Example(
                project=project,
                external_id=f"e{i}",
                fields={f: f"orig {f} {i}" for f in fields},
                image=f"img/o{i}.jpg" if task == "image-caption" else "",
                label=labels[i % len(labels)],
            )
            for i in range(n + gold)
        ]
    )
    Candidate.objects.bulk_create(
        [
            Candidate(
                project=project,
                external_id=f"c{i}",
                example=ex,
                fields={f: f"cf {f} {i}" for f in fields},
                image=f"img/c{i}.jpg" if task == "image-caption" else "",
                generator=generators[i % len(generators)],
                perturbation=perturbations[i % len(perturbations)],
                gold_label=(labels[1] if task == "image-caption" else labels[i % len(labels)]) if i >= n else None,
                confidence=((i * 37) % 100) / 100 if confidences else None,
            )
            for i, ex in enumerate(examples)
        ]
    )
    return project
