"""SC-001 (protocol/CONSTRAINTS.md): do standing instructions survive compaction, and does a sidecar
registry keep them? design.py (the task file, conditions, regimes and calls), analysis.py (scoring,
the forced-choice probe kind, the verdicts) and figures.py (its answer, figures and report)."""
