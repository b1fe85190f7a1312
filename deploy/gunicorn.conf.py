"""Gunicorn for the Django project. Start:

    gunicorn -c deploy/gunicorn.conf.py sampleproject.wsgi:application

Checked with Gunicorn 27.0.1. djbench starts Gunicorn from this file and overrides on
the command line (which wins over this file) only: bind, workers, worker class,
threads (gthread) and request-count recycling (off: --max-requests 0).

Worker classes (-k) djbench measures:
  sync        one request at a time per process (the default).
  gthread     a thread pool per process (--threads). Note: `sync` with threads > 1
              silently becomes gthread.
  gevent      greenlets; monkey-patches the stdlib. Django's async ORM refuses to run
              there (SynchronousOnlyOperation): async views are incompatible.
  uvicorn_worker.UvicornWorker
              ASGI through Uvicorn (package `uvicorn-worker`; the old
              `uvicorn.workers.UvicornWorker` is deprecated).
  asgi        Gunicorn's own ASGI worker (27.0.1 here): HTTP, WebSocket and lifespan;
              it passed djbench's whole verify gate.
"""

from __future__ import annotations

import multiprocessing
import os

bind = os.environ.get("DJANGO_BIND", "127.0.0.1:8000")
# (2 x cores) + 1 is Gunicorn's rule of thumb for sync workers.
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1))
worker_class = "sync"
threads = 1
worker_connections = 1000  # gevent / async workers only

# Keep-alive: Gunicorn's default (2 s) is meant for sync workers behind a proxy that
# buffers; a benchmark client and Caddy both reuse connections, so keep them a bit.
keepalive = 5
# A worker silent for this long is killed and replaced.
timeout = 30
graceful_timeout = 10
# Worker recycling against slow leaks, staggered by the jitter. (djbench turns it off
# with --max-requests 0 during benchmarks: see djbench/servers.py.)
max_requests = 10000
max_requests_jitter = 1000
# Listen queue (capped by net.core.somaxconn).
backlog = 2048

# Gunicorn 25.1+ opens a control socket under $HOME/.gunicorn by default: nothing
# here uses it, and it leaves files behind.
control_socket_disable = True

# Load the app in each worker after fork (preload_app = False): no DB connection or
# thread is shared across fork. preload_app = True saves memory through copy-on-write.
preload_app = False

# Errors to stderr; request logging off (costly; the proxy logs requests).
errorlog = "-"
accesslog = None
loglevel = "warning"

proc_name = "djbench-gunicorn"
# Trust X-Forwarded-* only from the local proxy.
forwarded_allow_ips = "127.0.0.1,::1"
