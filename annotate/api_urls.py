from django.urls import path

from annotate import apis

urlpatterns: list = []
