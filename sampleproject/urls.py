from __future__ import annotations

from django.urls import path

from sampleproject.catalog.api import api

urlpatterns = [
    path("api/", api.urls),
]
