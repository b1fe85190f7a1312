"""Stage 4, results: the one typed model of a results file, its storage and its summaries."""
