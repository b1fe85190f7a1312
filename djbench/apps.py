from __future__ import annotations

from django.apps import AppConfig


class DjbenchConfig(AppConfig):
    name = "djbench"
    verbose_name = "djbench"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from djbench import checks, querycount

        connection_created.connect(querycount.install, dispatch_uid="djbench.querycount")
        checks.register()
