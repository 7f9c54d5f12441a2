"""The members page's input, parsed by one form (issue 20, the house)."""

from __future__ import annotations

from django import forms

from projects.inputs import IdField, IdListField, InputForm


class MembersForm(InputForm):
    """``action`` (``add``, ``remove``, ``pause``, ``resume``) with ``username`` / ``role`` or
    ``membership``; the dashboard's older forms send ``unflag`` (+ ``next``) or ``user`` ids."""

    action = forms.CharField(required=False)
    unflag = IdField(required=False)
    membership = IdField(required=False)
    user = IdListField(required=False)
    next = forms.CharField(required=False)
    username = forms.CharField(required=False, strip=True)
    role = forms.CharField(required=False)

    def clean_role(self) -> str:
        return str(self.data.get("role", "annotator"))  # absent: annotator (membership_add checks it)
