"""The text rules: pure functions over text that more than one study or command reads, below the
runner core and above nothing (they import no other module of the package).

- values.py: the exact values a text holds (numbers, versions, paths, ids, dates, money), and the
  masking of keys and tokens.
- spellings.py: whether two spellings are one value, and when a value reads as another changed.
- claims.py: the claim words (done, approved, failed, must), what a clause claims of an item,
  and the one revocation rule (a sentence that withdraws or corrects an instruction).
- states.py: where a sentence ends (the one splitter) and reading a compacted state (its typed
  lines, its sections, whether it carries an instruction).
- ledger.py: the ledger a state is checked against (its format, normalize_ledger, the run's
  settings).
- templates.py: the agents' own summary templates (headings, opening and closing lines, Codex's
  handoff prefix), which the gate leaves alone, as data.
- gate.py: the release gate, check_state(state, ledger, source), and its self-test.
- gate_selftest.py: the self-test's ledger, source and cases, each a state the gate must pass or
  block.

A rule takes text and returns values: no I/O, no clock, no model. Input it cannot read raises
RuleInputError (or a subclass), which the command line reports in one line as it does the runner's
own errors. """
from __future__ import annotations


class RuleInputError(ValueError):
    """Input a text rule cannot read (a ledger that is not one), with a one-line message saying what
    to do next."""

    exit_code = 2
