"""Worker recycling as an axis (--recycle) and soak durations (--soak): parsing only.

A recycling setting is "off" or a comma-separated list of what to recycle by:

    max-requests=N   restart a worker after N requests
    jitter=J         ... after N + a random 0..J (staggers workers; needs max-requests)
    max-rss=MB       restart a worker whose resident memory exceeds MB MiB
    lifetime=S       restart a worker after S seconds

Each server gets the parts it has, under its own option names
(:func:`djbench.servers.recycle_flags`); the parts it lacks are recorded as
ignored, and a server that has none of them is `incompatible` for that setting.
Several settings are an axis: ``--recycle "off;max-requests=5000,jitter=500"``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from djbench.plan.options import OptionError

KEYS = ("max-requests", "jitter", "max-rss", "lifetime")
SOAK_LIMIT_S = 24 * 3600  # every load is bounded: a soak lasts at most a day


@dataclass(frozen=True)
class Recycle:
    """One recycling setting; all None is "off" (every server's recycling disabled)."""

    max_requests: int | None = None
    jitter: int | None = None
    max_rss: int | None = None  # MiB
    lifetime: int | None = None  # seconds

    @property
    def off(self) -> bool:
        return self.max_requests is None and self.max_rss is None and self.lifetime is None

    @property
    def label(self) -> str:
        if self.off:
            return "off"
        parts = [
            ("max-requests", self.max_requests),
            ("jitter", self.jitter),
            ("max-rss", self.max_rss),
            ("lifetime", self.lifetime),
        ]
        return ",".join(f"{k}={v}" for k, v in parts if v is not None)


OFF = Recycle()


def parse_one(raw: str) -> Recycle:
    text = raw.strip()
    if text == "off":
        return OFF
    values: dict[str, int] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep or key not in KEYS:
            raise OptionError(
                f"--recycle: cannot read {part.strip()!r} in {raw!r}; valid: off, or "
                "max-requests=N, jitter=J, max-rss=MB, lifetime=SECONDS joined by commas"
            )
        if key in values:
            raise OptionError(f"--recycle: {key} given twice in {raw!r}")
        try:
            number = int(value)
        except ValueError:
            raise OptionError(f"--recycle: {key} takes a whole number, got {value!r}") from None
        if number < (0 if key == "jitter" else 1):
            raise OptionError(f"--recycle: {key} must be at least 1, got {number}")
        values[key] = number
    if "jitter" in values and "max-requests" not in values:
        raise OptionError("--recycle: jitter staggers max-requests; give max-requests=N with it")
    if not values:
        raise OptionError(f"--recycle: nothing to recycle by in {raw!r}")
    return Recycle(
        max_requests=values.get("max-requests"),
        jitter=values.get("jitter"),
        max_rss=values.get("max-rss"),
        lifetime=values.get("lifetime"),
    )


def parse_axis(raw: str | None) -> list[Recycle]:
    """The settings of --recycle, in order, without repeats (empty: not given)."""
    if raw is None or not raw.strip():
        return []
    found = [parse_one(part) for part in raw.split(";") if part.strip()]
    return list(dict.fromkeys(found))


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(option: str, raw: str) -> float:
    """Seconds from '600', '30s', '10m', '1h30m' (bounded by SOAK_LIMIT_S)."""
    text = raw.strip().lower()
    try:
        seconds = float(text)
    except ValueError:
        parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)([smhd]))+", text)
        if parts is None:
            raise OptionError(
                f"{option} takes a duration like 30s, 10m or 1h30m, got {raw!r}"
            ) from None
        seconds = sum(float(n) * _UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([smhd])", text))
    if not math.isfinite(seconds) or seconds <= 0:
        raise OptionError(f"{option} must be a finite duration longer than 0, got {raw!r}")
    if seconds > SOAK_LIMIT_S:
        raise OptionError(f"{option} is capped at 24h (every load is bounded), got {raw!r}")
    return seconds
