from django.apps import AppConfig


class WorkspaceConfig(AppConfig):
    """The researcher's cross-app pages: the project dashboard, the data browser and pair view,
    and the members page. No models of its own."""

    name = "workspace"
    verbose_name = "Workspace"
