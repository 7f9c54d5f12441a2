"""The augmentation-evaluation form (issue 20, the house): test sets by key, never a path."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from labeling.evaluation import CLASSIFIERS, MAX_SEEDS, evaluation_choices
from labeling.selectors import CLASSIFIER_NAMES
from projects.models import Project


class EvaluationForm(forms.Form):
    """The evaluation form: sets by key (never a path), budget, seeds, classifier f'."""

    evals = forms.MultipleChoiceField(choices=(), error_messages={"required": "choose at least one evaluation set"})
    budget = forms.FloatField(min_value=0.01, max_value=0.99, initial=0.1)
    seeds = forms.IntegerField(min_value=1, max_value=MAX_SEEDS, initial=3)
    classifier = forms.ChoiceField(choices=[(c, CLASSIFIER_NAMES.get(c, c)) for c in CLASSIFIERS], initial="minilm-lr")

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [(c.key, c.description) for c in evaluation_choices(project=project)]
        cast(forms.MultipleChoiceField, self.fields["evals"]).choices = choices
