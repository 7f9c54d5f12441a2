from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from config.api_docs import ApiDocsView
from config.favicon import favicon
from projects import error_views, lockout, token_views

admin.site.login_form = lockout.AdminLoginForm

urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(authentication_form=lockout.LoginForm), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/lockouts/", lockout.lockouts, name="lockouts"),
    path("accounts/tokens/", token_views.tokens, name="tokens"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Session or token, as the schema; anonymous visitors go to the log-in page (config/api_docs.py).
    path(
        "api/docs/",
        ApiDocsView.as_view(url_name="schema", template_name="api/swagger_ui.html"),
        name="api-docs",
    ),
    path("api/v1/", include("annotate.api_urls")),
    path("api/v1/", include("workspace.data.api_urls")),
    path("api/v1/", include("projects.api_urls")),
    path("api/v1/", include("labeling.api_urls")),
    path("", include("projects.urls")),
    path("", include("workspace.overview.urls")),
    path("", include("generation.urls")),
    path("", include("workspace.data.urls")),
    path("", include("workspace.dashboard.urls")),
    path("annotate/", include("annotate.urls")),
    path("annotate/", include("workspace.members.urls")),
    path("labeling/", include("labeling.urls")),
    path("labeling/", include("workspace.evaluation.urls")),
    # Last: any other /api/ address answers the JSON 404, with DEBUG on too (projects/error_views.py).
    re_path(r"^api/(?P<rest>.*)$", error_views.api_not_found),
]

# An uncaught exception: the app's error page (JSON under /api/), 503 when the database cannot
# be reached (projects/error_views.py); Django's default is a bare "Server Error (500)".
handler500 = "projects.error_views.server_error"
# An address nothing matches: JSON under /api/ (scripts read it), the app's 404 page elsewhere.
handler404 = "projects.error_views.page_not_found"
