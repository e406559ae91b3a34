"""XR-S1, the audit's outputs: audit.csv (one row per item per compaction), analysis.md and
report.html, each opening with the answer (the label with its reasons, then one plain sentence per
question, then the tables), made of the shared report pieces (pilot/reports.py) and the sessions
study's blocks. Every text shown was masked when scored (audit.score_summary). """
from __future__ import annotations

import csv
import io

from ...reports import answer_html, answer_md, md_tables_to_html, pct, report_head, spreadsheet_safe
from ...stats import rate_summary
from ...svg import Look, grouped_bars
from .report import RULES_ERROR_NOTE, fmt_interval, render_blocks_md
from .audit import CLASSES, GATE_MEANS, LOST
from .audit_needed import FIGURE, csv_items, headline, needed_blocks, needed_figure
from .audit_judge import judge_lines

TITLE = "Audit: what your agent's own compactions lost"

# compactions listed in full, worst first (every row is in audit.csv)
MAX_WORST = 20

AUDIT_FIGURE = FIGURE

# what an unverified claim of the gate is (audit_gate.py), wherever the report names one
UNVERIFIED_MEANS = ("`unverified` rows of the release gate in audit.csv: no call or word of the "
                    "history bears the claim out and no failed call contradicts it, or only its "
                    "words set it against an instruction")

# Each item type's classes as three outcomes the figure draws side by side: kept (a value kept
# verbatim or
# reformatted, an instruction present, a step reported with its outcome), said wrong (changed,
# contradicted, claimed
# done) and missing (dropped, absent).
OUTCOMES = {"kept": {"value": ("kept", "reformatted", "former"), "instruction": ("present",),
                     "step": ("reported",)},
            "said wrong": {"value": ("changed",), "instruction": ("contradicted",),
                           "step": ("claimed done",)},
            "missing": {"value": ("dropped",), "instruction": ("absent",), "step": ("absent",)}}
OUTCOME_COLOURS = {"kept": "#009E73", "said wrong": "#E69F00", "missing": "#B00000"}
ITEM_NAMES = {"value": "values", "instruction": "instructions", "step": "failed steps"}

MAX_ITEMS_SHOWN = 30                    # items listed per compaction

CSV_FIELDS = ("file", "session", "compaction", "format", "trigger", "tokens_before", "tokens_after",
              "item_type",
              "kind", "item", "status", "beside_referent", "summary_wrote", "source_sentence",
              "summary_sentence", "category", "needed")

# the columns an audit with a judge adds: who decided the status, and the rules' own status
JUDGE_FIELDS = ("judged_by", "rules_status")


def render_audit_csv(records: list[dict], judged: bool = False) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS + JUDGE_FIELDS * judged)
    for r in records:
        for row in csv_items(r):
            beside = "" if row["beside"] is None else "yes" if row["beside"] else "no"
            values = (r["file"], r["session"], r["n"], r["format"], r["trigger"],
                      r["tokens_before"], r["tokens_after"], row["type"], row["kind"], row["item"],
                      row["status"], beside, row["instead"], row["source_sentence"],
                      row["summary_sentence"], row["category"], row["needed"])
            if judged:
                values += (row["judged_by"], row["rules_status"])
            writer.writerow([spreadsheet_safe("" if v is None else v) for v in values])
    return buffer.getvalue()


def plural(n: int, word: str) -> str:
    if word.endswith("y") and n != 1:
        return f"{n:,} {word[:-1]}ies"
    return f"{n:,} {word}{'s' * (n != 1)}"


def answers(a: dict) -> list[str]:
    """The report's opening sentence: what the next agents needed, kept, lost and misstated
    (audit_needed.headline); or why nothing was scored. With a judge, who judged and how well it
    agrees with the labels (audit_judge.judge_lines)."""
    out = context_answers(a) if not a["n_scored"] else [headline(a["needed_items"])]
    return out + (judge_lines(a["judge"]) if a.get("judge") else [])


def context_answers(a: dict) -> list[str]:
    """One plain sentence per question of the study's rules (every value, instruction and step:
    context beside the needed items), from the counts."""
    c = a["classes"]
    if not a["n_compactions"]:
        cut = len(a["read"].get("cut") or [])
        return [f"No compaction is recorded in the {plural(a['read']['files'], 'file')} read, so "
                "there is nothing "
                f"to score: the formats that record one are listed in tasks/sessions/README.md."
                + (f" {plural(cut, 'file')} read had {'its' if cut == 1 else 'their'} last line "
                   "cut and left out (listed under What was read): a compaction recorded there "
                   "is lost." if cut else "")]
    if not a["n_scored"]:
        return [f"{plural(a['n_compactions'], 'compaction')} recorded, none scorable (see why "
                "below)."]
    values = sum(c["value"].values())
    lost = c["value"]["dropped"] + c["value"]["changed"]
    out = [f"Across {plural(a['n_scored'], 'compaction')} in {plural(a['n_sessions'], 'session')}, "
           f"the summaries dropped or changed {lost:,} of {plural(values, 'exact value')}"
           + (f" ({pct(lost / values)}): {c['value']['dropped']:,} dropped, "
              f"{c['value']['changed']:,} changed, "
              f"{c['value']['reformatted']:,} reformatted, {c['value']['kept']:,} kept verbatim"
              + (f", {c['value']['former']:,} kept as the former value the history replaced"
                 if c["value"].get("former") else "") + "."
              if values else ".")]
    n = sum(c["instruction"].values())
    out.append(f"Of {plural(n, 'standing instruction')} in force, {c['instruction']['absent']:,} "
               f"{'were' if c['instruction']['absent'] != 1 else 'was'} absent from the summary "
               "and "
               f"{c['instruction']['contradicted']:,} contradicted." if n else
               "No standing instruction of the user was in force in the histories replaced.")
    out.append(steps_sentence(c["step"], a["gate"].get("status", 0)))
    flagged = sum(a["gate"].values())
    out.append(f"The release gate flagged {plural(flagged, 'sentence')} of the summaries"
               + (": " + "; ".join(f"{n:,} {k} ({GATE_MEANS.get(k, 'see the gate')})" for k,
                                   n in a["gate"].items())
                  + "." if flagged else ": none invents an instruction or a claim."))
    unverified = a.get("gate_unverified", 0)
    if unverified:
        out.append(f"Apart from those, {plural(unverified, 'sentence')} that the transcript can "
                   f"neither show nor contradict ({UNVERIFIED_MEANS}): worth a look, never "
                   "counted as a misstatement.")
    return out


def steps_sentence(steps: dict, status_flags: int) -> str:
    """The failed steps' sentence, from the study's rules and the gate's status findings together,
    so that it never says no failure was left while the gate flags a failure presented as passed."""
    n = sum(steps.values())
    flagged = (f"; the release gate also flagged {plural(status_flags, 'sentence')} that "
               "present a failure as passed or claim what the transcript contradicts "
               "(below)") if status_flags else ""
    if n:
        return (f"Of {plural(n, 'failed or denied step')} still unresolved, "
                f"{steps['claimed done']:,} {'were' if steps['claimed done'] != 1 else 'was'} "
                f"claimed done, {steps['absent']:,} absent and {steps['reported']:,} reported "
                f"with their outcome{flagged}.")
    if status_flags:
        return ("The rules found no failed or denied step left unresolved in the histories "
                f"replaced{flagged}.")
    return "No failed or denied step was left unresolved in the histories replaced."


def audit_figure(a: dict) -> str | None:
    """The headline figure: per item type, the share of its items the summaries kept, said wrong or
    left out, pooled over compactions (no intervals: the items of one session are not independent);
    None when nothing was scored."""
    return needed_figure(a) if a["n_scored"] else None


def context_figure(a: dict) -> str | None:
    """Per item type of the study's rules, the share kept, said wrong or left out (not drawn in
    the report since issue 40: the headline figure is the needed items')."""
    types = [t for t in CLASSES if sum(a["classes"][t].values())]
    if not a["n_scored"] or not types:
        return None
    cells = {}
    for t in types:
        total = sum(a["classes"][t].values())
        for outcome, classes in OUTCOMES.items():
            cells[(t, outcome)] = rate_summary(sum(a["classes"][t][c] for c in classes[t]), total)
    look = Look(None, {o: o for o in OUTCOMES}, OUTCOME_COLOURS,
                {t: f"{ITEM_NAMES[t]} ({sum(a['classes'][t].values()):,})" for t in types}, [])
    return grouped_bars(AUDIT_FIGURE[1], f"{plural(a['n_scored'], 'compaction')} in "
                        f"{plural(a['n_sessions'], 'session')}; kept: a value verbatim or "
                        "reformatted, an instruction present, a step reported with its "
                        f"outcome; said wrong: changed, contradicted, claimed done", types,
                        list(OUTCOMES), cells,
                        "share of items (%)", look, with_errors=False, x_label="item type")


def rate_cell(a: dict, name: str, key: str) -> str:
    return fmt_interval(a["rates"].get(name, {}).get(key, {"n": 0}))


def report_blocks(a: dict) -> list[tuple]:
    """The tables after the answer: ("h2"|"h3"|"p", text), ("table", header, rows), ("list",
    items)."""
    read = a["read"]
    blocks: list[tuple] = needed_blocks(a) + [("h2", "What was read")]
    blocks.append(
        (
            "p",
            f"{plural(read['files'], 'file')} read ({read['bytes'] / 2 ** 20:.2f} MB, digest "
            f"`{read['sha256'][:12]}`), {plural(read['sessions'], 'session')}, "
            f"{plural(a['n_compactions'], 'compaction')} recorded, {a['n_scored']:,} scored; "
            f"{plural(read['passed'], 'other file')} passed over (not a log's suffix).",
        )
    )
    copies = read.get("copies") or []
    if copies:
        blocks.append(("p", f"{plural(len(copies), 'copy')} of a log already read set aside (the "
                            "same sessions, ids and content: counted once, since a copy is no more "
                            "evidence):"))
        blocks.append(("list", [f"`{name}`: a copy of `{first}`" for name, first in copies]))
    if read["skipped"]:
        blocks.append(("p", f"Skipped, {len(read['skipped']):,}, each with why:"))
        blocks.append(("list", [f"`{name}`: {why}" for name, why in read["skipped"]]))
    if read.get("cut"):
        blocks.append(("p", f"Read without their last line, {len(read['cut']):,} (a log written "
                            "when the agent was stopped; a compaction recorded on that line is "
                            "not counted):"))
        blocks.append(("list", [f"`{name}`: its last line was cut and left out"
                                for name in read["cut"]]))
    if not a["n_scored"]:
        return blocks + unscored_blocks(a)
    blocks.append(("h2", "Context: every value, instruction and step the study's rules read"))
    blocks.append(("p", "The sessions study's rules on every exact value the conversation wrote "
                        "(the user, the agent's text and its calls' arguments; a value only a "
                        "tool printed is not read), standing instruction and failed step of the "
                        "histories replaced, and the release gate: none of it is in the headline "
                        "unless a needed item stands for it."))
    blocks.append(("list", context_answers(a)))
    blocks.append(("h2", "Per item type"))
    blocks.append(("p", f"Lost: a value changed or dropped, an instruction contradicted or absent, "
                        "a step claimed done or absent. Intervals: 95%, session-clustered and "
                        "never narrower than the binomial one, printed only from "
                        f"{a['min_sessions']} sessions on ({a['n_sessions']} here)."
                        + (" " + RULES_ERROR_NOTE if a["n_sessions"] >= a["min_sessions"]
                           else "")))
    blocks.append(("table", ["item type", "classes", "lost"],
                   [[t, ", ".join(f"{k} {n:,}" for k, n in a["classes"][t].items()),
                     rate_cell(a, f"{t}_lost", "all")]
                    for t in CLASSES]))
    kept = sum(a["classes"]["value"][c] for c in ("kept", "reformatted", "former"))
    blocks.append(("p", f"Of the {kept:,} values kept, reformatted or kept as former, those whose "
                        "history says what they are the value of (the count after the slash) and, "
                        "of them, those the summary writes within six words of one of those words "
                        f"(before it): {rate_cell(a, 'value_beside', 'all')}."))
    blocks.append(("table", ["the release gate's finding", "what it means", "sentences flagged"],
                   ([[k, GATE_MEANS.get(k, "-"), n] for k, n in a["gate"].items()] or [["none", "-",
                    0]]) + ([["unverified", UNVERIFIED_MEANS, a["gate_unverified"]]]
                            if a.get("gate_unverified") else [])))
    for title, suffix, keys in (("Per trigger", "by_trigger", a["triggers"]),
                                ("By tokens before compaction", "by_band", a["bands"])):
        blocks.append(("h2", title))
        blocks.append(("table", [title.split()[-1], "values lost", "instructions lost",
                                 "steps lost"],
                       [[k] + [rate_cell(a, f"{t}_lost_{suffix}",
                                         k) for t in CLASSES] for k in keys]))
    kinds = sorted(a["rates"].get("value_lost_by_kind", {}))
    blocks.append(("h2", "Values lost per kind"))
    blocks.append(("table", ["kind", "lost"], [[k, rate_cell(a, "value_lost_by_kind",
                                                             k)] for k in kinds]))
    blocks.append(("h2", "Each compaction's context rows"))
    blocks.append(("p", "In the order of what each lost or misstated of what the next agent "
                        f"needed (above); {min(MAX_WORST, len(a['worst']))} of "
                        f"{a['n_scored']} shown here, every row in audit.csv."))
    for r in a["needed_items"]["ranked"][:MAX_WORST]:
        blocks += compaction_blocks(r)
    return blocks + unscored_blocks(a)


def compaction_blocks(r: dict) -> list[tuple]:
    counts = r["counts"]
    said = [f"trigger {r['trigger']}" if r["trigger"] else "trigger not recorded",
            f"{r['tokens_before']:,} tokens before" if r["tokens_before"] is not None
            else "tokens not recorded"]
    if r["kept_turns"]:
        said.append(f"{r['kept_turns']} turns kept verbatim beside the summary")
    shown = [x for x in r["rows"] if x["status"] in LOST.get(x["type"], ()) or x["type"] == "gate"
             or x["status"] == "changed"]
    blocks = [("h3", f"{r['file']}, compaction {r['n']}"),
              ("p", f"{r['format']}, {'; '.join(said)}; it replaced "
               f"{plural(counts['turns'], 'turn')} holding {plural(counts['values'], 'value')}, "
               f"{plural(counts['instructions'], 'instruction')} in force and "
               f"{plural(counts['steps'], 'unresolved failed step')}; {len(shown)} lost, "
               "invented or unverified.")]
    if shown:
        blocks.append(("table", ["item", "kind", "status", "the summary wrote", "source sentence",
                                 "summary sentence"],
                       [[x["item"], x["kind"], x["status"], x["instead"] or "-",
                         x["source_sentence"] or "-",
                         x["summary_sentence"] or "-"] for x in shown[:MAX_ITEMS_SHOWN]]))
    return blocks


def unscored_blocks(a: dict) -> list[tuple]:
    if not a["unscored"]:
        return []
    return [
        ("h2", "Compactions not scored"),
        (
            "list",
            [
                f"{r['file']}, compaction {r['n']} ({r['source']}): {r['why']}"
                for r in a["unscored"]
            ],
        ),
    ]


def render_audit_md(a: dict) -> str:
    figure = (AUDIT_FIGURE[1], f"figures/{AUDIT_FIGURE[0]}") if audit_figure(a) else None
    opening = [f"# {TITLE}", "", f"**{a['label']}**: " + "; ".join(a["reasons"]) + ".", ""]
    return "\n".join(opening) + answer_md(answers(a),
                                          figure) + "\n" + render_blocks_md(report_blocks(a))


def render_audit_html(a: dict, figure_svg: str | None = None) -> str:
    head = report_head(TITLE, TITLE)
    opening = answer_html(a["label"], False, "; ".join(a["reasons"]) + ".", answers(a), figure_svg,
                          AUDIT_FIGURE[0] if figure_svg else None)
    body = md_tables_to_html(render_blocks_md(report_blocks(a)))
    return "\n".join(head + [opening, body, "</body></html>", ""])


def render_audit_headline(a: dict) -> str:
    """The lines printed at the end: the label and the answers."""
    return "\n".join([f"{a['label']}: {TITLE.split(': ')[1]}"] + [f"  {s}" for s in answers(a)])
