from __future__ import annotations

from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "sampleproject.catalog"
    label = "catalog"
    verbose_name = "Sample catalog"
