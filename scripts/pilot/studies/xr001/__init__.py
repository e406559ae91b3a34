"""XR-001 (protocol/PROTOCOL.md): does the format of a compacted state decide how many numbers
survive a cascade of compactions? design.py (the pseudoword task file, regimes and calls),
scoring.py (a cell scored as the run goes), coverage.py (what a bank's probes cover), analysis.py
(labels, the confirmatory test, the exploratory analyses), predictions.py (the pre-registered
predictions read), report.py (analysis.md, the headline and the answer) and figures.py (its figures
and pages)."""
