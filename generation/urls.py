from django.urls import path

from generation import views

urlpatterns: list = []
