from django.apps import AppConfig


class GenerationConfig(AppConfig):
    name = "generation"
    verbose_name = "Generation"

    def ready(self) -> None:
        from django.conf import settings

        from generation.services.runs import project_run_files, run_job_handler
        from projects.services.deletion import project_files_register
        from projects.services.jobs import job_kind_register

        job_kind_register(
            name="generation",
            queue="generation",
            handler=run_job_handler,
            time_limit=int(settings.COUNTERPART["GENERATION_TIME_LIMIT"]),
        )
        project_files_register(project_run_files)
