"""Stage 3, measure: the verify gate, load drivers, the sampler, one timed trial."""
