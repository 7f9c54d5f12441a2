from django.apps import AppConfig


class AnnotateConfig(AppConfig):
    name = "annotate"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from django.conf import settings

        from annotate.services.routing import project_route_job
        from projects.services.jobs import job_kind_register

        job_kind_register(
            name="route",
            queue="interactive",
            handler=project_route_job,
            time_limit=int(settings.COUNTERPART["JOB_TIME_LIMIT"]),
        )

        from annotate.services.quality import export_manifest, export_provenance
        from projects.services.exports import export_provenance_register

        export_provenance_register(pairs=export_provenance, manifest=export_manifest)

        from annotate.services.assignments import assignments_release_for
        from projects.services.memberships import membership_lease_releaser_register

        membership_lease_releaser_register(assignments_release_for)
