"""Generation-run pages: start a run from a project, the run page (progress polled by htmx
every second, stopped with ``HttpResponseStopPolling`` once the run is finished), cancel."""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from generation.ml import registry
from generation.models import GenerationRun
from generation.selectors import (
    run_metrics_rows,
    run_notes,
    run_progress,
    run_skip_summary,
    runs_of_project,
)
from generation.services.availability import all_availability, availability
from generation.services.llm import PROMPTING, backend_choices
from generation.services.run_quality import FILTER_NAMES, OPTIONAL_FILTERS, default_band
from generation.services.runs import (
    MAX_LIMIT,
    MAX_PER_ORIGINAL,
    MAX_SEED,
    run_cancel,
    run_options_clean,
    run_start,
)
from projects.http import HtmxHttpRequest
from projects.models import Project
from projects.permissions import researcher_required
from projects.services.jobs import BrokerUnavailable


class RunStartForm(forms.Form):
    generator = forms.ChoiceField(choices=())
    limit = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_LIMIT,
        help_text="at most this many originals: a sample spread evenly over the labels, drawn with the seed",
    )
    max_per_original = forms.IntegerField(required=False, min_value=1, max_value=MAX_PER_ORIGINAL)
    seed = forms.IntegerField(
        required=False,
        initial=0,
        min_value=0,
        max_value=MAX_SEED,
        help_text="drives the generator and the sample of originals (default 0)",
    )
    similarity_band = forms.CharField(required=False, help_text="LO,HI — keep LO < similarity <= HI")
    filters = forms.MultipleChoiceField(
        choices=[(f, f) for f in FILTER_NAMES],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        initial=[f for f in FILTER_NAMES if f not in OPTIONAL_FILTERS],
    )
    split = forms.CharField(required=False, help_text="only originals of this split")
    teacher = forms.ChoiceField(
        choices=[("auto", "automatic (on when the project has a task model)"), ("on", "on"), ("off", "off")],
        required=False,
        initial="auto",
        label="Teacher",
        help_text="the task model f reads every candidate: a flip is pooled only when f gives its target label "
        "at least the threshold, a label-keeping edit only when f keeps the label",
    )
    teacher_threshold = forms.FloatField(
        required=False, min_value=0.0, max_value=1.0, help_text="the teacher's P for flips (default 0.5)"
    )
    backend = forms.ChoiceField(
        choices=[("auto", "automatic")],
        required=False,
        initial="auto",
        label="Language model",
        help_text="where llm-prompt and concept-constrained get their answers",
    )
    generator_options = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text='JSON object, e.g. {"codes": ["negation", "lexical"]}',
    )

    def __init__(self, *args: Any, runnable: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        offered = registry.names() if runnable is None else runnable
        cast(forms.ChoiceField, self.fields["generator"]).choices = [(n, n) for n in offered]
        cast(forms.ChoiceField, self.fields["backend"]).choices = [(c.value, c.label) for c in backend_choices()]

    def clean_generator_options(self) -> dict[str, Any]:
        raw = (self.cleaned_data.get("generator_options") or "").strip()
        if not raw:
            return {}
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc}") from exc
        except RecursionError:
            raise forms.ValidationError("not valid JSON: nested too deeply") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("must be a JSON object")
        return value

    @staticmethod
    def peek(data: Any) -> tuple[str, Any]:
        """The posted generator and its options as far as they read, before the form is built
        (a generator that needs a model may still run when its options name one)."""
        generator = str(data.get("generator", "") or "")
        try:
            options = json.loads(data.get("generator_options") or "{}")
        except (json.JSONDecodeError, RecursionError):
            options = {}
        backend = str(data.get("backend") or "auto")  # the language-model choice (prompting generators)
        if isinstance(options, dict) and backend != "auto" and generator in PROMPTING:
            options = {**options, "backend": backend}
        return generator, options

    def raw_run_options(self) -> dict[str, Any]:
        """The options as far as they could be read, for the service's own checks (so every
        error shows at once, not only after the form's own fields are fixed)."""
        d = getattr(self, "cleaned_data", {})
        options: dict[str, Any] = {}
        for k in ("limit", "max_per_original", "seed"):
            if k in d:
                options[k] = d[k]
        for k in ("similarity_band", "split", "teacher", "teacher_threshold"):
            options[k] = d.get(k, self.data.get(k, ""))
        if "filters" in d:
            options["filters"] = list(d["filters"])
        elif hasattr(self.data, "getlist"):
            options["filters"] = self.data.getlist("filters")
        return {k: v for k, v in options.items() if v not in (None, "")}

    def run_options(self) -> dict[str, Any]:
        d = self.cleaned_data
        options = {
            k: d.get(k)
            for k in ("limit", "max_per_original", "seed", "similarity_band", "split", "teacher", "teacher_threshold")
        }
        options["filters"] = list(d.get("filters") or [])
        gen_opts: dict[str, Any] = dict(d.get("generator_options") or {})
        if d.get("backend") and d["backend"] != "auto" and d.get("generator") in PROMPTING:
            gen_opts["backend"] = d["backend"]
        options["generator_options"] = gen_opts
        return {k: v for k, v in options.items() if v not in (None, "")}


def generator_availability(project: Project) -> list[tuple[str, str, bool, str]]:
    """Every generator as (name, description, can run, why not) for this project's task and
    the configured models (``generation.services.availability``: what the API and the
    ``generate`` command say too)."""
    return [(a.name, a.description, a.available, a.reason) for a in all_availability(project.task)]


@researcher_required
def run_new(request: HttpRequest, project_id: int) -> HttpResponse:
    """Start a run from a project: pick a generator (only those that can run for this
    project's task and configuration are offered; the others are listed with the reason)
    and its options. Every error shows next to its field at once."""
    project = get_object_or_404(Project, pk=project_id)
    status = 200
    available = generator_availability(project)
    runnable = [name for name, _, ok, _ in available if ok]
    # A generator that needs a model may still run when the form names one (model_path).
    posted, opts = RunStartForm.peek(request.POST)
    posting = request.method == "POST" and posted and posted not in runnable
    if (
        posting
        and registry.is_registered(posted)
        and isinstance(opts, dict)
        and availability(posted, project.task, opts).available
    ):
        runnable.append(posted)
    default = "coco-cf" if project.task == "image-caption" else "rules"
    form = RunStartForm(request.POST or None, initial={"generator": default}, runnable=runnable)
    if request.method == "POST":
        valid = form.is_valid()
        if posted and posted not in runnable and registry.is_registered(posted):
            reason = next((r for n, _, _, r in available if n == posted), "")
            form.errors.pop("generator", None)
            form.add_error("generator", f"{posted} cannot run for this project: {reason or 'not available'}")
        try:
            run_options_clean(project=project, options=form.raw_run_options())
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                if field in form.fields and field not in form.errors:
                    form.add_error(field, errors)
            valid = False
        if valid and not form.errors:
            try:
                run = run_start(
                    project=project,
                    generator=form.cleaned_data["generator"],
                    options=form.run_options(),
                    created_by=request.user,
                )
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            except BrokerUnavailable as exc:  # the run is marked failed; it never runs in the request
                form.add_error(None, f"The run was not started: {exc}. Start the broker, then try again.")
                status = 503
            else:
                return redirect("run-detail", pk=run.pk)
    band = default_band(project.task)
    context = {
        "project": project,
        "form": form,
        "default_band": f"{band[0]},{band[1]}",
        "generators": available,
        "field_errors": sum(1 for name in form.errors if name != NON_FIELD_ERRORS),  # shown next to their fields
    }
    if form.errors and status == 200:
        status = 400
    return render(request, "generation/run_new.html", context, status=status)


@researcher_required
def run_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    runs = runs_of_project(project=project)[:100]
    return render(request, "generation/run_list.html", {"project": project, "runs": runs})


def _run_context(run: GenerationRun) -> dict[str, Any]:
    return {
        "run": run,
        "project": run.project,
        "progress": run_progress(run=run),
        "metrics_rows": run_metrics_rows(run=run),
        "skip_summary": run_skip_summary(run=run),
        "notes": run_notes(run=run),
    }


@researcher_required
def run_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The run page; an htmx poll gets only the progress fragment, and the poll stops
    (HTTP 286) once the run is finished — with the final fragment, metrics included."""
    run = get_object_or_404(GenerationRun.objects.select_related("project", "job"), pk=pk)
    context = _run_context(run)
    if request.htmx:
        if context["progress"].finished:
            html = render_to_string("generation/run_detail.html#progress", context, request=request)
            return HttpResponseStopPolling(html)
        return render(request, "generation/run_detail.html#progress", context)
    return render(request, "generation/run_detail.html", context)


@researcher_required
@require_POST
def run_cancel_view(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(GenerationRun.objects.select_related("project", "job"), pk=pk)
    run = run_cancel(run=run)
    if request.htmx:
        return render(request, "generation/run_detail.html#progress", _run_context(run))
    messages.info(request, f"Run {run.pk}: cancel requested ({run.status}).")
    return redirect("run-detail", pk=run.pk)
