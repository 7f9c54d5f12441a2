from django.urls import path

from annotate import views

urlpatterns: list = []
