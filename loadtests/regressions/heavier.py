"""The sample project's settings, with BALLAST_MB (default 5) more memory per process."""

from __future__ import annotations

import os

from sampleproject.settings import *  # noqa: F403

BALLAST_MB = int(os.environ.get("BALLAST_MB", "5"))
# Written byte by byte (not zero pages that the kernel could share or leave unmapped),
# so the pages are resident and private to each process that imports the settings.
BALLAST = bytes(range(256)) * (BALLAST_MB * 4096)
