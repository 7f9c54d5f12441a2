from django.urls import path

from labeling import views

urlpatterns: list = []
