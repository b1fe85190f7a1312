"""Stage 5, reports: presenters that read results only (console, report, compare, guide)."""
