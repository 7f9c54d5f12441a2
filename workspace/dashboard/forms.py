"""The dashboard's inputs: the risks fragment's query."""

from __future__ import annotations

from django import forms

from projects.inputs import InputForm


class WarningsQuery(InputForm):
    """``?limit=N``: show at most N risks (the overview); absent: all (the dashboard)."""

    limit = forms.IntegerField(min_value=1, max_value=50, required=False)
