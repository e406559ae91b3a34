"""XR-G1 (protocol/ADVERSARIAL.md): adversarial sessions, each state gated before the successor gets
it. design.py (the sessions, planted defects, the G2 cascade and its calls), analysis.py (the gate
table, the probes, the release verdicts) and figures.py (its answer and figures)."""
