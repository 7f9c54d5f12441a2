from django.apps import AppConfig


class WorkspaceConfig(AppConfig):
    """The researcher's cross-app pages: the project dashboard, the data browser and pair view,
    and the members page. No models of its own. The top floor, so it also wires the apps below
    it together where one needs another's work without importing it."""

    name = "workspace"
    verbose_name = "Workspace"

    def ready(self) -> None:
        from annotate.services.routing import active_selector_register
        from labeling.selectors import active_selection_for

        # Routing's ``active`` strategy ranks the pooled pairs with the labelling app's h.
        active_selector_register(active_selection_for)
