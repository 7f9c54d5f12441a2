"""Set up Label Studio for the annotation anchor (issue 33). Run with Label Studio's OWN
Python (its virtualenv under var/, never the project's), e.g.

    var/ls-venv/bin/python experiments/label_studio_anchor/ls_setup.py --annotators 50 --tasks 2000 --k 3

Its settings come from the environment as Label Studio reads them (``DJANGO_DB=sqlite`` with
``DATABASE_NAME``, or PostgreSQL with ``POSTGRE_NAME`` / ``POSTGRE_HOST`` …). Migrates, creates an
organisation with an owner and N annotators with API tokens (legacy tokens switched on for the
organisation), a project with a three-way NLI choice and ``maximum_annotations = k``, and the
tasks (written through Label Studio's own models, then its task-state update, as its import
does). Prints one JSON object: ``{"project": id, "tokens": [...]}``. Bounded: N and the task
count are taken as given; nothing is read from or sent to the network.
"""

# ruff: noqa: I001 - Label Studio has its own "projects" app, which isort would take for this repository's
from __future__ import annotations

import argparse
import json
import os
import sys

LABEL_CONFIG = """<View>
  <Text name="premise" value="$premise"/>
  <Text name="hypothesis" value="$hypothesis"/>
  <Choices name="label" toName="hypothesis" choice="single">
    <Choice value="entailment"/><Choice value="neutral"/><Choice value="contradiction"/>
  </Choices>
</View>"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--annotators", type=int, required=True)
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--tag", default="anchor")
    args = parser.parse_args()
    if not (0 < args.annotators <= 10_000 and 0 < args.tasks <= 1_000_000 and 0 < args.k <= 10):
        sys.exit("annotators 1–10,000, tasks 1–1,000,000, k 1–10")

    import label_studio

    sys.path.insert(0, os.path.dirname(label_studio.__file__))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings.label_studio")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from jwt_auth.models import JWTSettings
    from organizations.models import Organization
    from projects.models import Project
    from rest_framework.authtoken.models import Token
    from tasks.models import Task
    from users.models import User

    owner = User.objects.create_user(email=f"{args.tag}-owner@example.org", password=None, username=f"{args.tag}-o")
    org = Organization.create_organization(created_by=owner, title=args.tag)
    owner.active_organization = org
    owner.save(update_fields=["active_organization"])
    jwt, _ = JWTSettings.objects.get_or_create(organization=org)
    jwt.legacy_api_tokens_enabled = True
    jwt.save()
    project = Project.objects.create(
        title=args.tag,
        created_by=owner,
        organization=org,
        label_config=LABEL_CONFIG,
        maximum_annotations=args.k,
        overlap_cohort_percentage=100,
    )
    tokens = []
    users = User.objects.bulk_create(
        [
            User(email=f"{args.tag}-a{i}@example.org", username=f"{args.tag}-a{i}", password="!")
            for i in range(args.annotators)
        ]
    )
    users = list(User.objects.filter(username__startswith=f"{args.tag}-a").order_by("pk"))
    for u in users:
        org.add_user(u)
        u.active_organization = org
        u.save(update_fields=["active_organization"])
        tokens.append(Token.objects.get_or_create(user=u)[0].key)
    Task.objects.bulk_create(
        [
            Task(
                project=project,
                data={
                    "premise": "A man is playing a guitar on stage.",
                    "hypothesis": f"A man is not performing music ({i}).",
                },
            )
            for i in range(args.tasks)
        ],
        batch_size=1000,
    )
    project.update_tasks_states(
        maximum_annotations_changed=True, overlap_cohort_percentage_changed=True, tasks_number_changed=True
    )
    print(json.dumps({"project": project.pk, "tokens": tokens}))


if __name__ == "__main__":
    main()
