"""The pilot runner's package, behind scripts/run_pilot.py (its docstring maps the modules in
pipeline order)."""
