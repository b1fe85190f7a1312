"""Orchestration: the only code that wires plan, launch, measure and results together."""
