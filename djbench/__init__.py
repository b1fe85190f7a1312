"""djbench: measure a Django project under each Python application server."""

from __future__ import annotations

__version__ = "0.1.0"
