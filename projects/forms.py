"""The inputs of the project pages (export, import, API tokens, lock-outs), parsed by forms
(issue 20, the house): same field names and defaults as the pages send."""

from __future__ import annotations

from typing import Any

from django import forms

from projects.formats import parse_label_map
from projects.inputs import IdField, InputForm, StorableCharField, unstorable
from projects.services.exports import export_filters_parse
from projects.services.import_jobs import TARGETS, TASK_DATA_FORMATS, UPLOAD_FORMATS

EXPORT_FIELDS = ("format", "state", "label_source", "min_confidence", "split", "include_invalid")


class ExportJobQuery(InputForm):
    """``?job=<id>``: the export page showing the job a POST started (Post/Redirect/Get)."""

    job = forms.IntegerField(min_value=1, max_value=2**63 - 1)


class _Many(forms.Field):
    widget = forms.MultipleHiddenInput


class ExportForm(InputForm):
    """The export form (a POST, or a bookmarked GET): the format and the filters. The rules
    (known states and label sources, a confidence in [0, 1], comma-separated lists) are the
    export service's, shared with the export API; ``filters()`` is what they parsed."""

    format = forms.CharField(required=False)
    state = _Many(required=False)
    label_source = _Many(required=False)
    min_confidence = forms.CharField(required=False)
    split = _Many(required=False)
    include_invalid = forms.CharField(required=False)
    labelled_only = forms.CharField(required=False)

    def unstorable(self) -> str | None:
        """What makes a sent value unstorable (a NUL character…), named by its field; None."""
        getlist = getattr(self.data, "getlist", None)
        for name in self.data:
            values = getlist(name) if getlist else [self.data[name]]
            for value in values:
                if (problem := unstorable(str(value))) is not None:
                    return f"{name} contains {problem}"
        return None

    def is_blank(self) -> bool:
        """Nothing but the CSRF token was sent: the empty form."""
        return not [k for k in self.data if k != "csrfmiddlewaretoken"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        self.parsed, errors = export_filters_parse(self.data)
        for name, message in errors.items():
            self.add_error(name if name in self.fields else None, message)
        return data

    def filters(self) -> dict[str, Any]:
        """``format`` and the filters, parsed (also when some are in error: shown back)."""
        return dict(self.parsed)


class DownloadQuery(InputForm):
    """``?part=manifest``: an export's manifest instead of its data."""

    part = forms.CharField(required=False)

    def manifest(self) -> bool:
        return bool(self.is_valid() and self.cleaned_data["part"] == "manifest")


def uploads_parse(files: Any) -> dict[str, Any]:
    """The import page's uploaded files by field name (``file``, or a CAD layout's parts),
    the last one where a field came twice (the files come through the upload handlers)."""
    return {field: files.getlist(field)[-1] for field in files}


class ImportForm(InputForm):
    """The import page's fields: ``format``, ``split``, ``label_map`` (old=new,…) and
    ``skip_bad_rows``; the page shows the first error."""

    format = forms.ChoiceField(choices=[(f, f) for f in UPLOAD_FORMATS])
    split = StorableCharField(max_length=32)
    label_map = StorableCharField(label="label map", max_length=2000)
    skip_bad_rows = forms.BooleanField(required=False)
    # labelled-jsonl (and the other labelled formats) may be the pool's rows or the task
    # model's training data (issue 32.3); absent: the pool
    target = forms.ChoiceField(choices=[(t, t) for t in TARGETS], required=False)

    def clean_target(self) -> str:
        return str(self.cleaned_data.get("target") or "pool")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("target") == "task" and data.get("format") and data["format"] not in TASK_DATA_FORMATS:
            self.add_error("target", f"task training data is labelled text: one of {', '.join(TASK_DATA_FORMATS)}")
        return data

    def clean_split(self) -> str:
        return str(self.cleaned_data["split"]).strip()

    def clean_label_map(self) -> dict[str, str]:
        try:
            return parse_label_map(str(self.cleaned_data["label_map"]).strip())
        except ValueError as exc:
            raise forms.ValidationError(f"label map: {exc}") from None

    def shown(self) -> dict[str, Any]:
        """The values to show back in the form after an error: as they were sent (a format only
        when it is one of the choices; long values cut, as the fields would refuse them)."""
        fmt = str(self.data.get("format", ""))
        return {
            "format": fmt if fmt in UPLOAD_FORMATS else "",
            "split": str(self.data.get("split", "")).strip()[:32],
            "label_map": str(self.data.get("label_map", ""))[:2000],
            "skip_bad_rows": bool(self.data.get("skip_bad_rows")),
            "target": "task" if self.data.get("target") == "task" else "pool",
        }

    def first_error(self) -> str:
        return "; ".join(self.field_errors().values())

    def field_errors(self) -> dict[str, str]:
        """Each field's error, shown next to it on the page (issue 32.8)."""
        errors = super().field_errors()
        if "format" in errors:
            errors["format"] = f"choose a file format: {', '.join(UPLOAD_FORMATS)}"
        return errors


class ProjectDeleteForm(InputForm):
    """The delete page: ``confirm``, the project's name typed again."""

    confirm = StorableCharField(max_length=200, required=False)

    def __init__(self, *args: Any, project_name: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project_name = project_name

    def clean_confirm(self) -> str:
        typed = str(self.cleaned_data.get("confirm") or "").strip()
        if typed != self.project_name:
            raise forms.ValidationError(f"type the project's name, {self.project_name}, to confirm")
        return typed


class TokenForm(InputForm):
    """The tokens page: ``action`` (create, revoke) and, for a researcher revoking another's
    token, ``user`` (an id)."""

    action = forms.CharField(required=False)
    user = IdField(required=False)


class UnlockForm(InputForm):
    """The lock-outs page: unlock ``attempt`` (an id)."""

    attempt = IdField()
