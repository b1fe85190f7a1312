"""Known regressions, injected on purpose, to check that benchcompare flags them.

Two settings modules on top of the sample project's settings, chosen with
DJANGO_SETTINGS_MODULE (runbench passes it on to every server it starts):

- ``loadtests.regressions.slower``: every request costs about 25% more CPU (a
  middleware spins for a quarter of the CPU time the rest of the request took), so a
  CPU-bound server's throughput drops by about 20%. WSGI servers only: under ASGI a
  sync middleware would add thread hops of its own.
- ``loadtests.regressions.heavier``: each process holds BALLAST_MB (default 5) more
  memory, written so that the pages are really resident (PSS grows by that much per
  worker).

    DJANGO_SETTINGS_MODULE=loadtests.regressions.slower python manage.py runbench ...
"""
