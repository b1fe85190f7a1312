from __future__ import annotations

from django.apps import AppConfig


class DjbenchConfig(AppConfig):
    name = "djbench"
    verbose_name = "djbench"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from djbench import checks, exceptions, querycount
        from djbench.launch import datastate

        datastate.override_settings()  # only in a server runbench started on a copy

        connection_created.connect(querycount.install, dispatch_uid="djbench.querycount")
        exceptions.connect()  # only in a server runbench started
        checks.register()
