from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"
    verbose_name = "Pairwise labelling"

    def ready(self) -> None:
        from django.conf import settings

        from labeling.evaluation import evaluation_job
        from labeling.services import autolabel_job, autolabel_job_end, pairwise_train_job
        from projects.services.jobs import job_kind_register

        limit = int(settings.COUNTERPART["JOB_TIME_LIMIT"])
        job_kind_register(name="train", queue="interactive", handler=pairwise_train_job, time_limit=limit)
        job_kind_register(
            name="autolabel", queue="interactive", handler=autolabel_job, time_limit=limit, on_end=autolabel_job_end
        )
        job_kind_register(name="evaluate", queue="interactive", handler=evaluation_job, time_limit=limit)
        from labeling.task_training import task_model_job

        # training f, or (params.probe) a few training steps to size it for the machine (issue 30)
        job_kind_register(name="task_model", queue="ml", handler=task_model_job, time_limit=limit)

        from labeling.task_training import task_data_import
        from projects.services.import_jobs import task_data_importer_register

        # the import page's and API's "for the task model" rows (issue 32.3)
        task_data_importer_register(task_data_import)

        from labeling.selectors import export_manifest, export_provenance
        from projects.services.exports import export_provenance_register

        export_provenance_register(pairs=export_provenance, manifest=export_manifest)

        from labeling.services import project_model_files
        from projects.services.deletion import project_files_register

        project_files_register(project_model_files)
