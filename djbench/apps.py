from __future__ import annotations

import os

from django.apps import AppConfig

# The database copy a server runbench started serves (djbench.launch.datastate): its
# name, put in DATABASES["default"]["NAME"]. Read here, where nothing heavy is imported.
DATABASE_NAME_VARIABLE = "DJBENCH_DATABASE_NAME"


class DjbenchConfig(AppConfig):
    name = "djbench"
    verbose_name = "djbench"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from djbench import checks, exceptions, querycount

        if name := os.environ.get(DATABASE_NAME_VARIABLE):  # a server on a copy
            from django.conf import settings

            settings.DATABASES["default"]["NAME"] = name

        connection_created.connect(querycount.install, dispatch_uid="djbench.querycount")
        exceptions.connect()  # only in a server runbench started
        checks.register()
