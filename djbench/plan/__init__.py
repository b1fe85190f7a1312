"""Stage 1, plan: what to run, parsed and validated (scenarios, options, the project)."""
