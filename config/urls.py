from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/v1/", include("annotate.api_urls")),
    path("api/v1/", include("projects.api_urls")),
    path("", include("projects.urls")),
    path("", include("generation.urls")),
    path("annotate/", include("annotate.urls")),
    path("labeling/", include("labeling.urls")),
]
