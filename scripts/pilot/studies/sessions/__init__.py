"""XR-S1 (protocol/SESSIONS.md): the user's own agent sessions, compacted under each regime and
judged against the ground truth the transcript holds; and `audit`, the compactions the agent itself
recorded, judged the same way with no model call. design.py (the sessions rendered and cut, the
probes, regimes and calls), segments.py (the context window and where a session is cut), readers/
(the agents' log formats, one module each, under one registry), truth.py (the ground truth and the
judging of a state) with failed_steps.py (the failed and denied steps rule), analysis.py (scoring,
the paired tests) and report.py (its pages), figures.py (its answer and headline figure),
study_needed.py (a session with tool calls also judged by the needed items); for the audit,
needed.py (what the next agent needed, and whether the summary kept it), audit.py,
audit_needed.py (the needed items' rows and answer), audit_judge.py (with --judge, a judge model's
status on the items the rules cannot read) and audit_report.py (the audit's outputs)."""
