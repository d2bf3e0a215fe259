"""Job history in the Django admin: full ids and kind labels, per-partition runs, and the operator's
actions (requeue failed, cancel queued, download proof bundles)."""
from __future__ import annotations

import json
from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from gpu_engine import formatting, queue, validation
from gpu_engine.circom import registry
from gpu_engine.circom.forms import CircuitForm, CircuitNameTaken
from gpu_engine.kinds import PROOF_KINDS, get_kind, kind_label
from gpu_engine.models import KIND_CHOICES, Circuit, EngineHost, JobStatus, PartitionRun, ProofJob


def _bundle_response(payload: object, filename: str) -> HttpResponse:
    """`payload` as a JSON download (a bundle, or job id -> bundle)."""
    response = HttpResponse(json.dumps(payload, indent=1), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _safe_filename(job_id: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in job_id)


class ProofJobForm(forms.ModelForm):
    """The admin's job form: the fields go through the one rule set (gpu_engine/validation.py), so a
    job changed here is refused with the same message the API gives. Only the priority changes."""

    class Meta:
        model = ProofJob
        fields: tuple[str, ...] = ("priority",)

    def _checked(self, name: str, check) -> object:
        value = self.cleaned_data.get(name)
        try:
            return check(value)
        except validation.JobError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_priority(self) -> object:
        return self._checked("priority", validation.validate_priority)


class ProofJobAddForm(ProofJobForm):
    """A new job names its id and kind too. Plain fields, so every refusal (an empty one included)
    carries the rule set's own message rather than Django's."""

    job_id = forms.CharField(required=False, strip=False, help_text="letters, digits and . _ : @ + -")
    proof_kind = forms.CharField(required=False, widget=forms.Select(choices=[("", "---------"), *KIND_CHOICES]))

    class Meta(ProofJobForm.Meta):
        fields = ("job_id", "proof_kind", "priority")

    def clean_job_id(self) -> object:
        return self._checked("job_id", validation.validate_job_id)

    def clean_proof_kind(self) -> object:
        # A circuit's job carries its witnesses or inputs: it comes through the API or the command line.
        return self._checked("proof_kind", validation.validate_kind)


class KindFilter(admin.SimpleListFilter):
    """Built-in kinds and registered circuits, by their full labels (the field's choices know only
    the built-in ones)."""

    title = "kind"
    parameter_name = "proof_kind__exact"

    def lookups(self, request: HttpRequest, model_admin):
        builtin = [(k.name, k.label) for k in PROOF_KINDS.values()]
        return builtin + list(Circuit.objects.order_by("name").values_list("name", "label"))

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(proof_kind=self.value()) if self.value() else queryset


def _ms_text(ms: float | None) -> str:
    """A phase time as the panel shows it (12.3 s), with the milliseconds kept in the tooltip."""
    if ms is None:
        return formatting.NONE_TEXT
    return format_html('<span title="{} ms">{}</span>', f"{ms:.3f}", formatting.ms_duration(ms))


class PartitionRunInline(admin.TabularInline):
    """Each attempt at a partition: its phase times formatted as on the panel, one short line each."""

    model = PartitionRun
    extra = 0
    can_delete = False
    fields = ("index", "attempt", "state", "synthesis", "gpu", "finalize", "worker", "engine_id", "error",
              "recorded_at")
    readonly_fields = fields
    ordering = ("index", "attempt", "recorded_at")
    classes = ("partition-runs",)

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="synthesis")
    def synthesis(self, run: PartitionRun) -> str:
        return _ms_text(run.synth_ms)

    @admin.display(description="gpu")
    def gpu(self, run: PartitionRun) -> str:
        return _ms_text(run.gpu_ms)

    @admin.display(description="finalize")
    def finalize(self, run: PartitionRun) -> str:
        return _ms_text(run.finalize_ms)

    @admin.display(description="worker")
    def worker(self, run: PartitionRun) -> str:
        if run.worker_id in (None, ""):
            return formatting.NONE_TEXT
        gpu = f" · GPU {run.gpu_ordinal}" if run.gpu_ordinal is not None else ""
        worker = int(run.worker_id) if str(run.worker_id).isdigit() else run.worker_id  # stored as text
        return f"{formatting.worker_label(worker)}{gpu}"


@admin.register(ProofJob)
class ProofJobAdmin(admin.ModelAdmin):
    form = ProofJobForm
    list_display = ("job_id_full", "kind_label", "status", "engine", "queue_wait", "duration", "attempts",
                    "finished_at", "verified")
    list_filter = (KindFilter, "status", "claimed_by", "submitted_at", "finished_at")
    search_fields = ("job_id",)
    date_hierarchy = "submitted_at"
    ordering = ("-submitted_at",)
    inlines = [PartitionRunInline]
    actions = ["requeue_failed", "cancel_queued", "download_bundles"]
    list_per_page = 50
    exclude = ("bundle",)
    readonly_fields = ("job_id", "kind_label", "status", "total_partitions", "submitted_at", "claimed_at",
                       "finished_at", "queue_wait", "compute", "claimed_by", "lease_expires_at", "attempts",
                       "error", "verified", "vk_fingerprint", "timings_table", "bundle_link")

    class Media:
        css = {"all": ("statuspanel/admin.css",)}

    def get_readonly_fields(self, request: HttpRequest, obj: ProofJob | None = None) -> tuple[str, ...]:
        """A new job names its id and kind; after that only the priority may change."""
        if obj is None:
            return tuple(f for f in self.readonly_fields if f not in ("job_id", "kind_label"))
        return self.readonly_fields

    def get_form(self, request: HttpRequest, obj: ProofJob | None = None, change: bool = False, **kwargs):
        kwargs["form"] = ProofJobForm if obj is not None else ProofJobAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_inlines(self, request: HttpRequest, obj: ProofJob | None) -> list:
        return self.inlines if obj is not None else []  # a job being added has no runs yet

    def get_changeform_initial_data(self, request: HttpRequest) -> dict:
        return {"priority": 0, **super().get_changeform_initial_data(request)}

    def save_model(self, request: HttpRequest, obj: ProofJob, form: forms.ModelForm, change: bool) -> None:
        if not change:  # a new job is queued with its kind's partition count, like a submitted one
            obj.total_partitions = get_kind(obj.proof_kind).partitions
            obj.status = JobStatus.QUEUED
        super().save_model(request, obj, form, change)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # Bundles are large; the list never shows them.
        return super().get_queryset(request).defer("bundle")

    @admin.display(description="job id", ordering="job_id")
    def job_id_full(self, obj: ProofJob) -> str:
        return format_html('<span class="job-id" title="{}">{}</span>', obj.job_id, obj.job_id)

    @admin.display(description="kind", ordering="proof_kind")
    def kind_label(self, obj: ProofJob) -> str:
        return kind_label(obj.proof_kind)  # a circuit's full label too

    @admin.display(description="engine", ordering="claimed_by")
    def engine(self, obj: ProofJob) -> str:
        return obj.claimed_by or "—"

    @admin.display(description="compute")
    def duration(self, obj: ProofJob) -> str:
        return formatting.duration(obj.duration_secs())

    @admin.display(description="queue wait")
    def queue_wait(self, obj: ProofJob) -> str:
        """Submitted to claimed: time spent waiting for an engine."""
        return formatting.duration(obj.queue_wait_secs())

    @admin.display(description="compute")
    def compute(self, obj: ProofJob) -> str:
        """Claimed to finished: time the engine spent on it."""
        return formatting.duration(obj.duration_secs())

    @admin.display(description="timings")
    def timings_table(self, obj: ProofJob) -> str:
        """The per-phase totals and means the engine stored, as a small table of durations."""
        timings = obj.timings if isinstance(obj.timings, dict) else {}
        phases = sorted({k.split("_", 1)[1] for k in timings if k.startswith(("total_", "mean_"))})
        if not phases:
            return formatting.NONE_TEXT
        rows = format_html_join("", "<tr><th>{}</th><td>{}</td><td>{}</td></tr>", (
            (phase.removesuffix("_ms").replace("_", " "), formatting.ms_duration(timings.get(f"total_{phase}")),
             formatting.ms_duration(timings.get(f"mean_{phase}"))) for phase in phases))
        return format_html('<table class="timings"><thead><tr><th>phase</th><th>total</th>'
                           '<th>mean per partition</th></tr></thead><tbody>{}</tbody></table>'
                           '<p class="help">wall time {} over {} partition(s)</p>', rows,
                           formatting.ms_duration(timings.get("wall_ms")), timings.get("partitions", "—"))

    @admin.display(description="proof bundle")
    def bundle_link(self, obj: ProofJob) -> str:
        if not ProofJob.objects.filter(pk=obj.pk, bundle__isnull=False).exists():
            return "—"
        url = reverse("admin:gpu_engine_proofjob_bundle", args=[obj.pk])
        return format_html('<a href="{}">download {}.json</a>', url, _safe_filename(obj.job_id))

    def get_urls(self):
        extra = [path("<int:pk>/bundle/", self.admin_site.admin_view(self.bundle_view),
                      name="gpu_engine_proofjob_bundle")]
        return extra + super().get_urls()

    def bundle_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        if not self.has_view_permission(request):
            return JsonResponse({"error": "forbidden"}, status=403)
        job = ProofJob.objects.filter(pk=pk).first()
        if job is None:  # JSON like the other answers of this download, not the HTML 404 page
            return JsonResponse({"error": f"no job with primary key {pk}"}, status=404)
        if job.bundle is None:
            return JsonResponse({"error": f"job {job.job_id!r} has no proof bundle"}, status=404)
        return _bundle_response(job.bundle, f"{_safe_filename(job.job_id)}.json")

    @admin.action(description="Requeue selected failed jobs", permissions=["change"])
    def requeue_failed(self, request: HttpRequest, queryset: QuerySet) -> None:
        n, skipped, refused = queue.requeue_failed(queryset.values_list("pk", flat=True))
        self.message_user(request, f"Requeued {n} failed job(s).", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"Skipped {skipped} job(s) that are not failed.", messages.WARNING)
        for job_id, reason in refused:
            self.message_user(request, f"Not requeued: job {job_id!r} cannot be proved: {reason}", messages.ERROR)

    @admin.action(description="Cancel selected queued jobs", permissions=["change"])
    def cancel_queued(self, request: HttpRequest, queryset: QuerySet) -> None:
        cancelled, skipped = 0, 0
        for job_id in queryset.values_list("job_id", flat=True):
            if not queryset.filter(job_id=job_id, status=JobStatus.QUEUED).exists():
                skipped += 1
                continue
            try:
                queue.cancel_job(job_id)
                cancelled += 1
            except queue.JobError as exc:
                skipped += 1
                self.message_user(request, str(exc), messages.WARNING)
        self.message_user(request, f"Cancelled {cancelled} queued job(s).", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"Skipped {skipped} job(s) that are not queued.", messages.WARNING)

    @admin.action(description="Download proof bundles (JSON)", permissions=["view"])
    def download_bundles(self, request: HttpRequest, queryset: QuerySet):
        rows = list(ProofJob.objects.filter(pk__in=queryset.values("pk"), bundle__isnull=False)
                    .order_by("job_id").values_list("job_id", "bundle"))
        if not rows:
            self.message_user(request, "None of the selected jobs has a proof bundle.", messages.WARNING)
            return None
        if len(rows) == 1:
            job_id, bundle = rows[0]
            return _bundle_response(bundle, f"{_safe_filename(job_id)}.json")
        return _bundle_response({job_id: bundle for job_id, bundle in rows}, "proof-bundles.json")


@admin.register(EngineHost)
class EngineHostAdmin(admin.ModelAdmin):
    list_display = ("engine_id", "hostname", "backend", "workers", "pid", "started_at", "last_heartbeat",
                    "online", "stopped_at")
    list_filter = ("backend", "hostname")
    search_fields = ("engine_id", "hostname")
    readonly_fields = ("engine_id", "hostname", "backend", "workers", "pid", "started_at", "last_heartbeat",
                       "stopped_at")

    @admin.display(boolean=True, description="online")
    def online(self, obj: EngineHost) -> bool:
        if obj.stopped_at is not None:
            return False
        return timezone.now() - obj.last_heartbeat <= timedelta(seconds=settings.JOB_LEASE_SECS)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False



class CircuitAdminForm(CircuitForm):
    """The admin's add form is the registration form itself (one rule set with `addcircuit`)."""

    def __init__(self, *args, instance=None, **kwargs) -> None:  # the admin passes a fresh instance
        super().__init__(*args, **kwargs)
        self.instance = instance

    def save_m2m(self) -> None:  # the admin calls it after save; a circuit has no relations to save
        return None


@admin.register(Circuit)
class CircuitAdmin(admin.ModelAdmin):
    list_display = ("name", "label", "num_constraints", "num_wires", "num_public", "domain_size", "accepts_inputs",
                    "checks_constraints", "registered_at")
    search_fields = ("name", "label")
    readonly_fields = ("name", "curve", "zkey_sha256", "zkey_file", "key_file", "wasm_file", "sym_file", "r1cs_file",
                       "num_constraints", "num_wires", "num_public", "domain_size", "input_signals", "registered_at",
                       "vkey")

    @admin.display(boolean=True, description="inputs (wasm)")
    def accepts_inputs(self, obj: Circuit) -> bool:
        return bool(obj.wasm_file)

    @admin.display(boolean=True, description="constraint check (r1cs)")
    def checks_constraints(self, obj: Circuit) -> bool:
        return bool(obj.r1cs_file)

    def get_form(self, request: HttpRequest, obj=None, change=False, **kwargs):
        if obj is None:  # adding: the registration form, not a ModelForm of the stored fields
            return CircuitAdminForm
        kwargs["fields"] = ["label"]
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj=None):
        if obj is None:
            return [(None, {"fields": ["name", "label", "zkey", "wasm", "sym", "r1cs"]})]
        return [(None, {"fields": ["label", *self.readonly_fields]})]

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return () if obj is None else self.readonly_fields

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context=None):
        try:
            return super().add_view(request, form_url, extra_context)
        except CircuitNameTaken as exc:  # lost a race for the name with another registration
            self.message_user(request, f"circuit not registered: {exc}", messages.ERROR)
            return HttpResponseRedirect(request.path)

    def save_form(self, request: HttpRequest, form, change: bool):
        if not change:  # registering: the form copies the files, converts the key, stores the row
            return form.save()
        return super().save_form(request, form, change)

    def save_model(self, request: HttpRequest, obj, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            registry.forget_labels()

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        # A circuit's jobs reference it; removing it would orphan their inputs and proofs.
        return False
