from django.conf import settings
from django.urls import path

from projects import views

urlpatterns: list = [
    path("", views.home, name="home"),
    path("projects/", views.project_list, name="project-list"),
    path("projects/new/", views.project_new, name="project-new"),
    path("projects/<int:pk>/delete/", views.project_delete_page, name="project-delete"),
    path("projects/<int:pk>/export/", views.project_export, name="project-export"),
    path("projects/<int:pk>/export/manifest/", views.project_export_manifest, name="project-export-manifest"),
    path("projects/<int:pk>/import/", views.project_import, name="project-import"),
    path("exports/<int:job_id>/download/", views.export_download, name="export-download"),
    path("images/<path:path>", views.image_file, name="image-file"),
    # MEDIA_URL in every environment, through the same check: nothing under MEDIA_ROOT is public.
    path(settings.MEDIA_URL.strip("/") + "/<path:path>", views.media_file, name="media-file"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<int:pk>/", views.job_fragment, name="job-fragment"),
]
