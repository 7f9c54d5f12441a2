"""End-to-end check of h through the services, on a project imported from data with gold labels.

    python manage.py import_data --project e2e-nli --task nli --format cad-nli --split dev ../shared/data/cad
    E2E_PROJECT=e2e-nli E2E_HUMAN=80 python manage.py shell < experiments/e2e_autolabel.py

Marks E2E_HUMAN random candidates (seed 0) human-labelled with their gold label, trains CAPC
(without, then with ``E2E_WARM`` if set) and auto-labels the rest; prints CV figures, how many
were auto-labelled and their accuracy against gold. It rewrites the project's candidate states:
run it on a throw-away project.
"""

import os
import random
import time

from labeling import services
from projects import states
from projects.models import Candidate, Project

project = Project.objects.get(name=os.environ.get("E2E_PROJECT", "e2e-nli"))
ids = list(Candidate.objects.filter(project=project).values_list("pk", flat=True))
random.Random(0).shuffle(ids)
human = ids[: int(os.environ.get("E2E_HUMAN", "80"))]
Candidate.objects.filter(pk__in=human).update(state=states.HUMAN_LABELED, label_source="human")
for c in Candidate.objects.filter(pk__in=human):
    c.label_id = c.gold_label_id
    c.save(update_fields=["label"])
Candidate.objects.filter(project=project).exclude(pk__in=human).update(
    state=states.POOLED, label=None, label_source="", confidence=None
)
warm_spec = os.environ.get("E2E_WARM", "")
for warm in ["", warm_spec] if warm_spec else [""]:
    Candidate.objects.filter(project=project, state__in=[states.AUTO_LABELED, states.ABSTAINED]).update(
        state=states.POOLED, label=None, label_source="", confidence=None
    )
    t = time.time()
    model = services.pairwise_train(project=project, mode="capc", warm_start=warm)
    t_train = time.time() - t
    t = time.time()
    run = services.autolabel(project=project)
    t_label = time.time() - t
    auto = Candidate.objects.filter(project=project, state=states.AUTO_LABELED)
    right = sum(1 for a, g in auto.values_list("label_id", "gold_label_id") if a == g)
    print(
        f"warm start {warm or '-'}: CV accuracy {model.cv_accuracy:.3f}, ECE {model.cv_ece:.3f}, "
        f"features {model.metrics['features']!r}, sibling context {model.metrics.get('sibling_context')}; "
        f"auto-labelled {run.auto_labeled}/{run.considered} with accuracy {right / max(1, run.auto_labeled):.3f}, "
        f"abstained {run.abstained}; train {t_train:.1f} s, autolabel {t_label:.1f} s"
    )
