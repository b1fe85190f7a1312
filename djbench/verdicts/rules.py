"""What every verdict is held to, as the rest of djbench may quote and plan with it:
the smallest change that counts, the error rate, the rounds a verdict needs, and the
sequential looks over a horizon (their levels, and the rounds a change needs to be
seen). The engine itself (djbench.verdicts.engine) is imported inside this layer only;
this module is its public face for planning (run/) and for words (reports/)."""

from __future__ import annotations

from djbench.verdicts.engine.decide import (
    ALPHA,
    DECIDED,
    LOOK_COST,
    MIN_ROUNDS,
    MIN_TRIALS,
    NOISE_SD,
    PLANNED_CHANGE,
    THRESHOLD,
    Change,
    detectable,
    rounds_needed,
)
from djbench.verdicts.engine.spending import LOOKS, look_level, look_rounds

__all__ = [
    "ALPHA",
    "DECIDED",
    "LOOKS",
    "LOOK_COST",
    "MIN_ROUNDS",
    "MIN_TRIALS",
    "NOISE_SD",
    "PLANNED_CHANGE",
    "THRESHOLD",
    "Change",
    "detectable",
    "look_level",
    "look_rounds",
    "rounds_needed",
]
