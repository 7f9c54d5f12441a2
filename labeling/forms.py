"""The inputs of the labelling buttons (train h, auto-label), parsed by forms (issue 20, the
house): same field names and defaults as the project page sends."""

from __future__ import annotations

from typing import Any

from django import forms

from labeling.selectors import cad_missing_note, warm_start_choices
from labeling.services import warm_start_refusal
from projects.inputs import InputForm
from projects.models import Project


class TrainForm(InputForm):
    """``mode`` (default ``capc``; the service checks it) and ``warm_start``: the key of one of
    the listed warm-start sets, or blank; cleaned to the set's spec ("" for none)."""

    warm_start = forms.CharField(required=False, strip=True)
    mode = forms.CharField(required=False)
    # the project's newest task model ("latest", the page's default) or none ("")
    task_model = forms.ChoiceField(required=False, choices=[("latest", "newest task model"), ("", "none")])

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project

    def clean_warm_start(self) -> str:
        key = self.cleaned_data["warm_start"]
        sets = warm_start_choices(project=self.project)
        known = {k: spec for k, _, spec in sets}
        titles = {k: title for k, title, _ in sets}
        if key and key not in known:
            choices = ", ".join(known) or f"none for {self.project.task} projects"
            note = cad_missing_note(project=self.project, found=bool(known), what="warm starts")
            raise forms.ValidationError(f"choose one of the listed data sets ({choices}){'. ' + note if note else ''}")
        refusal = warm_start_refusal(project=self.project, spec=known[key], title=titles[key]) if key else ""
        if refusal:  # the page shows it disabled; a post of it anyway is told why before any job starts
            raise forms.ValidationError(refusal)
        return str(known.get(key, ""))

    def clean_mode(self) -> str:
        return str(self.data.get("mode", "capc"))


class AutolabelForm(InputForm):
    """``min_confidence``: blank for the model's own threshold (the service checks the range)."""

    min_confidence = forms.CharField(required=False, strip=True)

    def clean_min_confidence(self) -> float | None:
        raw = self.cleaned_data["min_confidence"]
        try:
            return float(raw) if raw else None
        except ValueError:
            raise forms.ValidationError("min confidence must be a number between 0 and 1") from None


class TaskModelForm(InputForm):
    """The task model's training: base (minilm, mpnet or a local path), epochs, a cap on the
    task training data (0: all). The service checks the base and the data."""

    base = forms.CharField(required=False, max_length=1000, strip=True)
    epochs = forms.IntegerField(required=False, min_value=1, max_value=20)
    max_examples = forms.IntegerField(required=False, min_value=0)
    counterfactuals = forms.BooleanField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        return {
            "base": data.get("base") or "minilm",
            "epochs": data.get("epochs") or 3,
            "max_examples": data.get("max_examples") or 0,
            "counterfactuals": bool(data.get("counterfactuals")),
        }
