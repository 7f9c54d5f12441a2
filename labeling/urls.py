from django.urls import path

from labeling import views

urlpatterns: list = [
    path("projects/<int:pk>/flip-rates/", views.flip_rates, name="labeling-flip-rates"),
]
