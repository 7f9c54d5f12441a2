"""The overview's inputs: the remedy buttons' form."""

from __future__ import annotations

from django import forms

from projects.inputs import InputForm, StorableCharField


class RemedyForm(InputForm):
    """A remedy button: ``remedy`` is ``abstained`` (send every abstained pair to people) or
    ``warning`` with the ``key`` of the risk whose candidates to route."""

    remedy = forms.ChoiceField(choices=[("abstained", "abstained"), ("warning", "warning")])
    key = StorableCharField(max_length=300, required=False)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if data.get("remedy") == "warning" and not data.get("key"):
            self.add_error("key", "name the risk to act on")
        return data
