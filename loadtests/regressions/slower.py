"""The sample project's settings, with every request about 25% more expensive in CPU."""

from __future__ import annotations

from sampleproject.settings import *  # noqa: F403
from sampleproject.settings import MIDDLEWARE

MIDDLEWARE = ["loadtests.regressions.middleware.SpinMiddleware", *MIDDLEWARE]
SPIN_FRACTION = 0.25
