from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Projects (kernel)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        # Register the Celery tasks in every process, not only in workers: the job service finds
        # the job task by name (projects.services.jobs.JOB_TASK) instead of importing this module.
        import projects.tasks  # noqa: F401
        from projects.services.exports import export_job
        from projects.services.import_jobs import import_job, import_job_end
        from projects.services.jobs import job_kind_register

        limit = int(settings.COUNTERPART["JOB_TIME_LIMIT"])
        job_kind_register(name="export", queue="interactive", handler=export_job, time_limit=limit)
        job_kind_register(
            name="import", queue="interactive", handler=import_job, time_limit=limit, on_end=import_job_end
        )
