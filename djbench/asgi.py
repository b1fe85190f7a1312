"""ASGI entry point for projects that have none: Django's own ``get_asgi_application()``.

Many projects have ``WSGI_APPLICATION`` and no ``asgi.py`` or ``ASGI_APPLICATION``;
djbench then serves the ASGI servers ``djbench.asgi:application`` and says so in the
results (``environment.asgi_app_source``). It does not answer the ASGI lifespan
protocol (plain Django does not), so the servers run with lifespan "auto".
"""

from __future__ import annotations

from django.core.asgi import get_asgi_application

application = get_asgi_application()
