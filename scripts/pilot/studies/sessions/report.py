"""XR-S1, the report (protocol/SESSIONS.md section 6): the analysis (analysis.py) rendered as one
list of blocks, written as markdown (analysis.md) and as HTML (report.html), the lines printed at
the end of a run, and the listing of every value lost as lost.csv. Pure functions from the analysis
to text; every secret was masked when the bank was scored. EXPLORATORY throughout."""
from __future__ import annotations

import csv
import io

from ...records import SIMULATED_STAMP
from ...reports import (fmt_p, inline_html, md_table, pct, render_recheck_section, report_head,
                        report_opening_html, spreadsheet_safe)
from ...stats import rate_summary
from .design import PROTOCOL_ID
from .measured import rules_line
from .study_needed import judge_line, needed_blocks
from .truth import VALUE_KINDS


# lost values listed per regime in analysis.md and report.html (all: lost.csv)
MAX_LOST_SHOWN = 40


def fmt_interval(summary: dict) -> str:
    if not summary["n"]:
        return "none"
    text = f"{summary['k']}/{summary['n']} = {pct(summary['rate'])}"
    if summary.get("interval"):
        text += f" [{100 * summary['lo']:.1f}, {100 * summary['hi']:.1f}]"
    return text


# what no interval here covers (issue 43, point 4)
RULES_ERROR_NOTE = ("An interval covers the sampling of sessions only, not the error of the rules "
                    "that find and judge the items (their measured figures: protocol/SESSIONS.md "
                    "section 3.5).")


def intervals_note(a: dict) -> str:
    n, least = a["n_sessions"], a["min_sessions"]["interval"]
    return ("Intervals: 95%, from the session-clustered bootstrap widened to hold the binomial "
            f"(Wilson) interval, printed only from {least} sessions on (values, instructions and "
            "steps of one session are not "
            f"independent; fewer sessions cannot support an interval). " +
            (f"This bank has {n} session{'s' * (n != 1)}: no interval is printed." if n
             < least else RULES_ERROR_NOTE))


def label_why(a: dict) -> str:
    """Why the study's report is EXPLORATORY (and PARTIAL, while cells are missing), as its label
    box says."""
    cov = a["coverage"]
    return ("No protocol was registered before these sessions were chosen, so nothing here is a "
            "confirmatory result: the rates describe these sessions, this model and these prompts"
            + ("; the intervals read the sessions as a sample of sessions like them and cover that "
               "sampling only. " if a["n_sessions"] >= a["min_sessions"]["interval"] else ". ")
            + ("" if a["complete"] else f"PARTIAL: {cov['complete_cells']} of "
               f"{cov['expected_cells']} cells are "
                                        f"complete; rerun the same command to finish."))


def report_blocks(a: dict) -> list[tuple]:
    """The report as blocks: ("h1"|"h2"|"p", text), ("table", header, rows), ("list", items)."""
    title = f"{PROTOCOL_ID}: what compaction lost from your sessions"
    blocks: list[tuple] = [("h1", (f"{SIMULATED_STAMP}: " if a["simulated"] else "") + title)]
    blocks.append(("p", "**EXPLORATORY**. " + label_why(a)))
    blocks.append(("p", rules_line()))
    if "judge" in a:
        blocks.append(("p", judge_line(a["judge"])))
    blocks.append(("h2", "Sessions read"))
    blocks.append(("table", ["session", "format", "read", "skipped and why", "turns", "segments",
                             "values",
                             "instructions", "failed steps", "probes"],
                   [[s["file"], s["format"], f"{s['read']['read']} {s['read']['unit']}",
                     "; ".join(f"{n} {why}" for why, n in s["read"]["skipped"].items()) or "none",
                     s["read"]["turns"], s["segments"], s["values"], s["instructions"], s["steps"],
                     s["probes"]]
                    for s in a["sessions"]]))
    if a["left_out"]:
        blocks.append(("p", "Left out of the folder: " + "; ".join(f"{n} ({why})" for n,
            why in a["left_out"].items())))
    blocks.append(("p",
                   "Regimes: " + "; ".join(f"{r}: {a['descriptions'][r]}" for r in a["regimes"])))
    blocks.append(("h2", "Exact values in the final state"))
    blocks.append(("p", "Each fact of a session written as an exact value (amounts, counts and "
                        "other numbers, dates, times, versions, digests, identifiers, paths, URLs, "
                        "e-mail addresses; one fact once, however often it is spelled) against the "
                        "final state: kept (one of the session's spellings written in the state as "
                        "a whole value of its kind: `12` is not kept by `12:30`, `ORD-12` or "
                        "`12/03/2025`), reformatted (the same value written otherwise), changed (a "
                        "close value of the same kind that the session never gives, or the value "
                        "it replaced given as current), dropped, or former (a value the session "
                        "itself replaced, kept apart from the current one). "
                        "Beside its referent: of the values kept or reformatted whose session says "
                        "what they are the value of, those written within six words of one of "
                        "those words (a value moved to another name, XR-001's signature "
                        "error, is not). " +
                        intervals_note(a)))
    blocks.append(("table", ["regime", "kept", "reformatted", "changed", "dropped", "former",
                             "lost (changed or dropped)",
                             "beside its referent"],
                   [[r, fmt_interval(a["kept"].get(r, rate_summary(0, 0))),
                     a["classes"][r]["reformatted"],
                     a["classes"][r]["changed"], a["classes"][r]["dropped"],
                     a["classes"][r]["former"],
                     fmt_interval(a["lost"].get(r, rate_summary(0, 0))),
                     fmt_interval(a["beside"].get(r, rate_summary(0, 0)))] for r in a["regimes"]]))
    none = rate_summary(0, 0)
    for title, field, order in (("per kind of value", "kept_by_kind", VALUE_KINDS),
                                ("per where the value was said", "kept_by_source",
                                 ("user", "assistant", "tool call",
                                                                                    "tool result")),
                                ("per session", "kept_by_session", list(a["kept_by_session"]))):
        blocks.append(("p", f"Kept verbatim, {title}:"))
        blocks.append(("table", [title.split()[-1], *a["regimes"]],
                       [[key] + [fmt_interval(a[field][key].get(r, none)) for r in a["regimes"]]
                        for key in order if key in a[field]]))
    if "needed_kept" in a:
        blocks += needed_blocks(a, fmt_interval, none)
    blocks.append(("h2", "Your regime against each built-in one"))
    if a["tests"]:
        least = a["min_sessions"]["test"]
        blocks.append(("p", f"A sign test over sessions on `kept`: per session, the share of its "
                            "values kept by each regime (paired on the same value, model, budget "
                            "and sample); b = sessions where yours kept more, c = sessions where "
                            "the built-in one did; exact two-sided binomial p, Holm-adjusted over "
                            "the family. The values of one session are not independent, so the "
                            f"session is the unit; below {least} sessions the test cannot reach p "
                            "< 0.05 and no p is printed. A regime is called better only where "
                            "its Holm-adjusted p is below 0.05, from a test that could reach it: "
                            f"over this family of {a['tests'][0].get('family', 0)} tests, Holm's "
                            f"adjustment lets none reach it below "
                            f"{a['min_sessions'].get('family') or least} sessions, so those read "
                            "not tested; otherwise the direction column says no difference shown. "
                            "Exploratory: no test here was planned before the sessions were "
                            "seen."))
        blocks.append(("table", ["yours", "built-in", "sessions", "values paired", "b", "c", "p",
                                 "p (Holm)",
                                 "direction"],
                       [[t["yours"], t["built_in"], t["sessions"], t["pairs"], t["b"], t["c"],
                         fmt_p(t["p"]) if t["p"] is not None else f"none: {t['sessions']} of "
                         f"{least} sessions",
                         fmt_p(t["p_holm"]) if t["p"] is not None else "-",
                         t["direction"]] for t in a["tests"]]))
        if a.get("needed_tests"):
            blocks += needed_test_blocks(a["needed_tests"], least)
    else:
        blocks.append(("p", "No regime of your own was run: add your compaction prompt with "
                            "`--regime-file FILE.json` (tasks/regimes.example.json shows the "
                            "format) to compare it with each built-in regime."))
    blocks.append(("h2", "Standing instructions and failed steps"))
    blocks.append(("p", "Each standing instruction still in force (one the user withdrew is not "
                        "counted) is contradicted when a sentence of the final state says its "
                        "opposite (a prohibition stated, planned or granted as done, the order "
                        "lifted), else present when every one of its key terms is in the state "
                        "(terms present: the constraints study's rule, which misses a paraphrase "
                        "without them and is no proof the meaning is kept), else absent. Each step "
                        "still failed or denied is claimed done when a sentence that names it says "
                        "it was done, passed or sent and reports no failure, reported when such a "
                        "sentence gives its outcome (failed, denied, refused, not done), else "
                        "absent."))
    blocks.append(("table", ["regime", "instructions present", "contradicted", "absent",
                             "failed or denied steps reported with their outcome", "claimed done",
                             "absent"],
                   [[r, fmt_interval(a["instructions"].get(r, rate_summary(0, 0))),
                     a["instruction_classes"][r]["contradicted"],
                     a["instruction_classes"][r]["absent"],
                     fmt_interval(a["steps"].get(r, rate_summary(0, 0))),
                     a["step_classes"][r]["claimed done"],
                     a["step_classes"][r]["absent"]] for r in a["regimes"]]))
    wrong = [f"{x['regime']}: {x['what']} `{x['item']}` ({x['session']}): the state says "
             f"\"{x['state']}\""
             for x in a["said_wrong"]]
    if wrong:
        blocks.append(("p", "Instructions contradicted and steps claimed done, with the state's "
                       "sentence:"))
        blocks.append(("list", wrong[:MAX_LOST_SHOWN]))
    blocks.append(("h2", "The release gate against the transcript"))
    blocks.append(("p", "Each compacted final state through the release gate "
                        "(scripts/pilot/rules/gate.py) with the session and the regime's own "
                        "prompt as its source, and a ledger of the failed or denied steps and the "
                        "user's standing instructions in force: obligation = instruction-like text "
                        "that is none of the user's instructions, one that sets rules aside, or a "
                        "sentence that says the opposite of one of them; status = a failed or "
                        "denied step presented as done, or never reported; value = a value the "
                        "session never gives that reads as one it gives, changed; schema = a field "
                        "that steers the successor. Counts are final states with at least one "
                        "blocking finding of the kind."))
    categories = list(dict.fromkeys(c for g in a["gate"].values() for c in g["by_category"]))
    blocks.append(("table", ["regime", "states", "fail", *categories],
                   [[r, g["states"], g["fail"], *(g["by_category"].get(c, 0) for c in categories)]
                    for r, g in a["gate"].items()]))
    examples = [f"{r}: {f['category']}: {f['detail']} :: {f['text']}" for r,
                g in a["gate"].items() for f in
                g["examples"][:2]]
    if examples:
        blocks.append(("list", examples))
    blocks.append(("h2", "Your probes"))
    if any(a["probes"].get(r, {}).get("n") for r in a["regimes"]):
        blocks.append(("p", "Asked of the resumed model after the final checkpoint; correct only "
                            "for the exact text on an `ANSWER:` line."))
        blocks.append(("table", ["regime", "correct", "classes"],
                       [[r, fmt_interval(a["probes"].get(r, rate_summary(0, 0))),
                         ", ".join(f"{c} {n}" for c, n in sorted(a["probe_classes"][r].items()))]
                        for r in a["regimes"]]))
    else:
        blocks.append(("p", "No probes file was given (`--probes FILE`), so no question was "
                       "asked; none is invented."))
    blocks.append(("h2", "What was lost, regime by regime"))
    blocks.append(("p", f"Each dropped or changed value with the sentence it came from and what "
                        f"the state wrote instead (at most {MAX_LOST_SHOWN} per regime here; every "
                        "one is in lost.csv)."))
    for r in a["regimes"]:
        lost = a["lost_values"][r]
        blocks.append(("h3", f"{r}: {len(lost)} lost"))
        if lost:
            blocks.append(("table", ["session", "kind", "value", "lost as", "the state wrote",
                                     "said in", "sentence"],
                           [[" ".join(filter(None, (x["session"], x["model"], x["variant"]))),
                             x["kind"], x["value"],
                             x["class"], x["instead"] or "-", f"{x['source']}, segment "
                             f"{x['segment']}", x["sentence"]]
                            for x in lost[:MAX_LOST_SHOWN]]))
    for mine, lost in a["typed_kept_yours_lost"].items() if "R2" in a["regimes"] else ():
        blocks.append(
            (
                "p",
                f"Kept verbatim by the typed block R2 but lost by {mine}: "
                + (
                    ", ".join(f"{x['value']} ({x['kind']}, {x['session']})" for x in lost[:30])
                    or "none"
                ),
            )
        )
    blocks.append(("h2", "Cost"))
    blocks.append(("table", ["regime", "calls", "prompt tokens", "output tokens"],
                   [[r, c["calls"], c["prompt_tokens"], c["output_tokens"]] for r,
                    c in a["costs"].items()]))
    recheck = render_recheck_section(a)
    blocks.append(("h2", recheck[0].lstrip("# ")))
    blocks += [("p", line) for line in recheck[1:] if line.strip()]
    return blocks


def needed_test_blocks(tests: list[dict], least: int) -> list[tuple]:
    """The same sign test on the needed items kept, over the sessions that have them; its p-values
    are Holm-adjusted in one family with the values' tests above."""
    return [("p", "The same test on the needed items kept (what the next agent needed), over the "
                  "sessions that have them, paired on the same item; Holm-adjusted in one family "
                  "with the tests on values above."),
            ("table", ["yours", "built-in", "sessions", "items paired", "b", "c", "p", "p (Holm)",
                       "direction"],
             [[t["yours"], t["built_in"], t["sessions"], t["pairs"], t["b"], t["c"],
               fmt_p(t["p"]) if t["p"] is not None else f"none: {t['sessions']} of {least} "
               "sessions", fmt_p(t["p_holm"]) if t["p"] is not None else "-", t["direction"]]
              for t in tests])]


def render_blocks_md(blocks: list[tuple]) -> str:
    out = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out += ["#" * int(kind[1]) + " " + block[1], ""]
        elif kind == "p":
            out += [block[1], ""]
        elif kind == "table":
            out += [md_table(block[1], block[2]) if block[2] else "(none)", ""]
        elif kind == "list":
            out += [f"- {item}" for item in block[1]] + [""]
    return "\n".join(out)


def render_blocks_html(blocks: list[tuple]) -> str:
    """The blocks as HTML, their markdown (`code`, **strong**) rendered as analysis.md's reader
    would see it."""
    text, out = inline_html, []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out.append(f"<{kind}>{text(block[1])}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{text(block[1])}</p>")
        elif kind == "table":
            out.append("<table><tr>" + "".join(f"<th>{text(h)}</th>" for h in block[1]) + "</tr>" +
                       "".join("<tr>" + "".join(f"<td>{text(c)}</td>" for c in row)
                               + "</tr>" for row in block[2])
                       + "</table>")
        elif kind == "list":
            out.append("<ul>" + "".join(f"<li>{text(item)}</li>" for item in block[1]) + "</ul>")
    return "\n".join(out)


def render_md(analysis: dict) -> str:
    return render_blocks_md(report_blocks(analysis))


def render_headline(analysis: dict) -> str:
    """The lines printed at the end of a run: values kept, instructions present or contradicted,
    steps claimed done and gate failures per regime."""
    cov = analysis["coverage"]
    partial = ("" if analysis["complete"] else f", PARTIAL: {cov['complete_cells']} of "
               f"{cov['expected_cells']} cells")
    lines = [f"{PROTOCOL_ID} (EXPLORATORY" + (", SIMULATED" if analysis["simulated"] else "")
             + partial + "): "
             f"{len(analysis['sessions'])} sessions, "
             f"{sum(s['values'] for s in analysis['sessions'])} exact values"]
    none = rate_summary(0, 0)
    for r in analysis["regimes"]:
        kept, ins = analysis["kept"].get(r, rate_summary(0, 0)), analysis["instructions"].get(r,
            rate_summary(0, 0))
        gate = analysis["gate"].get(r)
        lines.append(f"  {r}: values kept {fmt_interval(kept)}; instructions present (terms "
                     f"present) {fmt_interval(ins)}, contradicted "
                     f"{analysis['instruction_classes'][r]['contradicted']}; "
                     f"steps claimed done {analysis['step_classes'][r]['claimed done']}" +
                     (f"; gate fails {gate['fail']}/{gate['states']} states" if gate else "") +
                     (f"; needed items kept {fmt_interval(analysis['needed_kept'].get(r, none))}"
                      f", misstated {analysis['needed_wrong'].get(r, none)['k']}"
                      if "needed_kept" in analysis else ""))
    if "judge" in analysis:
        judge = analysis["judge"]
        lines.append(f"  needed items judged by {judge['model']} (the rules' figures beside its in "
                     f"the report); {judge['agreement']}")
    return "\n".join(lines)


LOST_CSV_FIELDS = ("regime", "model", "variant", "session", "kind", "value", "lost as",
                   "the state wrote", "said in",
                   "segment", "sentence")


def render_lost_csv(analysis: dict) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LOST_CSV_FIELDS)
    for regime, rows in analysis["lost_values"].items():
        for x in rows:
            writer.writerow([spreadsheet_safe("" if v is None else v) for v in (
                regime, x["model"], x["variant"], x["session"], x["kind"], x["value"], x["class"],
                x["instead"],
                x["source"], x["segment"], x["sentence"])])
    return buffer.getvalue()


def report_html(results: dict, analysis: dict, drawn: list) -> str:
    """report.html (Study.report.report_html): the label, the answer and its figure (drawn with
    stamped=False), then the same blocks as analysis.md after its title and label, as HTML."""
    blocks = report_blocks(analysis)
    parts = report_head(blocks[0][1], blocks[0][1]) + [report_opening_html(analysis,
        label_why(analysis), drawn),
                                                        render_blocks_html(blocks[2:]),
                                                        "</body></html>"]
    return "\n".join(parts) + "\n"
