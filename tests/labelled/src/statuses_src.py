"""Statuses: short hand-written histories, summaries written of them later, and the status of one item of the
history in one summary. Invented text throughout; no line comes from a real transcript, a paper or another
repository, and every key, token, address and account in it is made up.

Written on 2026-12-06 by labeller B (issue 43), who had not read the tool's rules, its code, its benchmarks or
SESSIONS.md. The labels say what a careful human reading the history and the summary means, not what any program
is expected to answer.

H(role, text)
  One turn of a history. role is user, assistant or tool_result. A step (a tool call) is an assistant turn that
  reads exactly "$ <command>", followed by a tool_result turn holding what the command printed.

P(group, kind, history, item, summary, status, notes=None, ambiguous=False, instead=None)
  group    a short id of the scenario; every pair built on the same history shares it (split by group).
  kind     value, instruction or step.
  item     value: the value as it is written in the history;
           instruction: the exact words of the user's turn that give it;
           step: the command of a failed or refused call, as written after "$ ".
           Where one text stands for two facts (the same number used twice), `notes` says which one is meant.
  summary  what an agent wrote later: a compaction summary or a handoff note, 1 to 8 sentences.
  status   what the summary does with the item:
    value
      kept          the summary gives the same fact in the same spelling.
      reformatted   the same fact, spelled another way: 2,500 as 2.5k, 14:00 as 2 pm, a date written out,
                    an IBAN without its spaces, 3e-4 as 0.0003.
      changed       the summary gives a different value for the same thing (`instead` holds that value). A
                    stale value stated as current after the history corrected it is changed, too.
      dropped       the fact is not in the summary. A token that only sits inside a longer one (12 inside 1249,
                    or inside a file name) does not keep it, and neither does the same digits meaning something
                    else (3 replicas does not keep a failureThreshold of 3).
      former        the history replaced this value, and the summary mentions it only as the old one, rightly
                    ("moved from 8080 to 9090").
    instruction (a standing instruction of the user)
      kept          the summary states it as still in force, verbatim or in other words, with its conditions.
      contradicted  the summary states or plans the opposite, or reports something done against it.
      absent        the summary does not carry it. This includes a near-miss that loses the condition that makes
                    the rule (run ruff before every commit -> "run ruff"), and a key word of it that turns up in an
                    unrelated sentence.
      withdrawn     the history itself took it back or replaced it; the summary should not carry it in force.
                    `notes` says what the summary does with it (leaves it out, notes it as dropped, or still
                    states it as in force, which is wrong).
    step (a call that failed, or that the user, a hook or a rule refused)
      reported      the summary says it failed or was refused.
      claimed_done  the summary says or implies it succeeded (a commit called pushed when the push was
                    rejected or refused).
      absent        the summary says nothing about it, neither failed nor done.
      resolved_later  a later turn of the history shows the goal reached by another command; `notes` says
                    whether the summary tells it that way, leaves the failure out, or still calls it failing.
  instead  only for changed: the value the summary gives in its place.
  ambiguous  True for the few pairs where a careful reader could go either way; `notes` says why.

Harness refusals are written in the shapes /work/shared/reference/session-formats.md gives, or in my own words.
"""

KINDS = ("value", "instruction", "step")
STATUSES = {
    "value": ("kept", "reformatted", "changed", "dropped", "former"),
    "instruction": ("kept", "contradicted", "absent", "withdrawn"),
    "step": ("reported", "claimed_done", "absent", "resolved_later"),
}
ROLES = ("user", "assistant", "tool_result")


def H(role, text):
    return {"role": role, "text": text}


def P(group, kind, history, item, summary, status, notes=None, ambiguous=False, instead=None):
    return {"group": group, "kind": kind, "history": list(history), "item": item, "summary": summary,
            "status": status, "notes": notes, "ambiguous": ambiguous, "instead": instead}


def U(text):
    return H("user", text)


def A(text):
    return H("assistant", text)


def T(text):
    return H("tool_result", text)


def RUN(command):
    """A step: the assistant's tool call, written as the command it runs."""
    return H("assistant", "$ " + command)


NOT_GRANTED = "Claude requested permissions to use Bash, but you haven't granted it yet."

PAIRS = []

# --- billing-port: a port corrected, a commit stopped by a hook ----------------------------------------------------
h = [
    U("The billing service should listen on 8080 locally. Never commit the .env file."),
    RUN("git add -A && git commit -m 'wire billing env'"),
    T("detect-secrets...........................................................Failed\n- hook id: detect-secrets\n"
      "- exit code: 1\n\nERROR: Potential secrets about to be committed to git repo!\n\n"
      "Secret Type: Secret Keyword\nLocation:    .env:3"),
    U("Actually make it 9090, 8080 clashes with the local proxy."),
]
s1 = ("The billing service's local port moved from 8080 to 9090 because 8080 clashes with the local proxy. Standing "
      "rule: the .env file must never be committed. The commit attempt was stopped by the detect-secrets pre-commit "
      "hook (a secret in .env); nothing is committed yet.")
s2 = "Billing service listens on port 8080 locally. Committed the env wiring; next up is the invoice endpoint."
PAIRS += [
    P("billing-port", "value", h, "9090", s1, "kept"),
    P("billing-port", "value", h, "8080", s1, "former"),
    P("billing-port", "instruction", h, "Never commit the .env file.", s1, "kept", notes="paraphrase"),
    P("billing-port", "step", h, "git add -A && git commit -m 'wire billing env'", s1, "reported"),
    P("billing-port", "value", h, "9090", s2, "changed", instead="8080",
      notes="the port from before the user's correction, stated as current"),
    P("billing-port", "instruction", h, "Never commit the .env file.", s2, "absent", ambiguous=True,
      notes="the rule is not stated; the commit it claims was a 'git add -A' that would have taken .env along, so a "
            "reader could call the summary contradicted (done against the rule)"),
]

# --- orders-backfill: a batch cap, a timeout fixed by a rerun on another host --------------------------------------
h = [
    U("Backfill the orders table from 2026-11-01 to 2026-11-30. Batch size 2,500 rows; don't go above that, the "
      "replica lags."),
    RUN("python etl/backfill.py --table orders --start 2026-11-01 --end 2026-11-30 --batch 2500"),
    T('Traceback (most recent call last):\n  File "etl/backfill.py", line 88, in <module>\n    main()\n'
      '  File "etl/backfill.py", line 61, in main\n    conn = psycopg.connect(dsn)\n'
      'psycopg.OperationalError: connection to server at "10.4.2.17", port 5432 failed: timeout expired'),
    RUN("python etl/backfill.py --table orders --start 2026-11-01 --end 2026-11-30 --batch 2500 --host 10.4.2.18"),
    T("batch 1/93 ok (2500 rows)\nbatch 2/93 ok (2500 rows)\n...\nbatch 93/93 ok (1204 rows)\n"
      "done: 231,204 rows in 14m02s"),
]
s1 = ("Backfilled orders for 2026-11-01 through 2026-11-30 in batches of 2.5k rows: 231,204 rows. The first run timed "
      "out connecting to 10.4.2.17; the rerun against 10.4.2.18 finished. Keep batches small because the replica "
      "lags.")
s2 = "The orders backfill for November 2026 is done (231204 rows). Batches are capped at 2,500 rows, per the user."
STEP = "python etl/backfill.py --table orders --start 2026-11-01 --end 2026-11-30 --batch 2500"
PAIRS += [
    P("orders-backfill", "value", h, "2,500", s1, "reformatted", notes="2.5k"),
    P("orders-backfill", "value", h, "231,204", s1, "kept"),
    P("orders-backfill", "instruction", h, "Batch size 2,500 rows; don't go above that", s1, "absent",
      notes="near miss: 'keep batches small' loses the cap of 2,500"),
    P("orders-backfill", "step", h, STEP, s1, "resolved_later", notes="the summary says the rerun on 10.4.2.18 "
      "finished it"),
    P("orders-backfill", "step", h, STEP, s2, "resolved_later",
      notes="the summary leaves the failed first run out and gives the end state, which is right"),
    P("orders-backfill", "value", h, "231,204", s2, "reformatted", notes="231204, no thousands separator"),
]

# --- ios-testflight: a rejected upload, a hold on App Review -------------------------------------------------------
h = [
    U("Bump the iOS app to 4.12.0 (build 318) and upload it to TestFlight. Don't submit it for App Review yet, "
      "marketing wants to check the screenshots first."),
    RUN("bundle exec fastlane ios beta"),
    T("[14:02:11]: Uploading binary to App Store Connect...\n[14:03:40]: ERROR ITMS-90189: Redundant Binary Upload. "
      "You've already uploaded a build with build number '318' for version number '4.12.0'.\n"
      "[14:03:40]: fastlane finished with errors\n\n[!] Error uploading ipa file"),
]
s1 = "iOS app bumped to 4.12.0 (build 318), uploaded to TestFlight and submitted for App Review."
s2 = ("iOS 4.12.0: the TestFlight upload was rejected (ITMS-90189, build 318 already exists for 4.12.0), so the build "
      "number has to go up before retrying. Do not submit for App Review until marketing has checked the "
      "screenshots.")
PAIRS += [
    P("ios-testflight", "step", h, "bundle exec fastlane ios beta", s1, "claimed_done"),
    P("ios-testflight", "instruction", h, "Don't submit it for App Review yet", s1, "contradicted",
      notes="the summary says it was submitted"),
    P("ios-testflight", "value", h, "318", s2, "kept"),
]

# --- refund-german: a refund call that errors because the charge was already refunded ------------------------------
h = [
    U("Customer on ticket #88213 was charged twice, €74.90 each time. Refund the duplicate charge ch_7Hq2LmXv. "
      "Always reply to this customer in German."),
    RUN("stripe refunds create --charge ch_7Hq2LmXv"),
    T('{\n  "error": {\n    "code": "charge_already_refunded",\n    "message": "Charge ch_7Hq2LmXv has already been '
      'refunded.",\n    "type": "invalid_request_error"\n  }\n}'),
]
s1 = ("Ticket #88213: the customer was charged 74.90 EUR twice. Refunding ch_7Hq2LmXv failed with "
      "charge_already_refunded, so someone refunded it earlier; confirm with the customer before doing anything "
      "else. Replies to this customer go out in German.")
s2 = "Refunded the duplicate charge ch_7Hq2LmXv (€74.90) on ticket 88213 and replied to the customer in English."
PAIRS += [
    P("refund-german", "value", h, "€74.90", s1, "reformatted", notes="74.90 EUR"),
    P("refund-german", "value", h, "#88213", s1, "kept"),
    P("refund-german", "step", h, "stripe refunds create --charge ch_7Hq2LmXv", s2, "claimed_done", ambiguous=True,
      notes="the call failed, but the charge does stand refunded (by someone earlier); 'Refunded' claims the agent "
            "did it, which is false, yet the end state it implies is true"),
    P("refund-german", "value", h, "#88213", s2, "reformatted", notes="88213 without the '#'"),
]

# --- k8s-scale: two facts share the number 3; RBAC forbids the scale ----------------------------------------------
h = [
    U("Scale checkout-api to 3 replicas, and set the readiness probe failureThreshold to 3 as well."),
    RUN("kubectl -n shop scale deploy/checkout-api --replicas=3"),
    T('Error from server (Forbidden): deployments.apps "checkout-api" is forbidden: User "ci-deployer" cannot patch '
      'resource "deployments/scale" in API group "apps" in the namespace "shop"'),
]
s1 = ("checkout-api is meant to run 3 replicas, but kubectl scale was forbidden for ci-deployer in namespace shop "
      "(RBAC), so someone with rights has to do it. The readiness probe change has not been started.")
s2 = "checkout-api scaled to 3 replicas. The readiness probe failureThreshold is still to be set to 3."
PAIRS += [
    P("k8s-scale", "value", h, "3", s1, "kept", notes="the item is the replica count"),
    P("k8s-scale", "value", h, "3", s1, "dropped",
      notes="the item is the failureThreshold; the only 3 in the summary is the replica count"),
    P("k8s-scale", "step", h, "kubectl -n shop scale deploy/checkout-api --replicas=3", s1, "reported"),
    P("k8s-scale", "value", h, "3", s2, "kept", notes="the item is the failureThreshold"),
]

# --- invoice-licences: 12 only inside INV-1249 ----------------------------------------------------------------------
h = [U("Invoice INV-1249 is for 12 licences at $104.08 each, net terms 30 days. The customer's PO number is 4471-B.")]
s1 = "INV-1249 covers the licence purchase at $104.08 per seat, net 30, against PO 4471-B."
PAIRS += [
    P("invoice-licences", "value", h, "12", s1, "dropped", notes="the count of licences; 12 appears only inside "
      "INV-1249"),
    P("invoice-licences", "value", h, "30 days", s1, "reformatted", notes="'net 30' is the same payment term"),
]

# --- pnpm-revoked: a rule withdrawn after its tool failed -----------------------------------------------------------
h = [
    U("Use pnpm for all installs in this repo."),
    RUN("pnpm install"),
    T('ERR_PNPM_UNSUPPORTED_ENGINE  Unsupported environment (bad pnpm and/or Node.js version)\n\nYour pnpm version is '
      'incompatible with "/home/dev/storefront".\n\nExpected version: >=9.1\nGot: 8.15.4'),
    U("Ugh. Forget pnpm then, just use npm for now."),
    RUN("npm ci"),
    T("added 1184 packages, and audited 1185 packages in 38s\n\n212 packages are looking for funding\n"
      "  run `npm fund` for details\n\nfound 0 vulnerabilities"),
]
s1 = ("Dependencies are installed with npm ci. The user dropped the pnpm requirement after pnpm 8.15.4 failed the "
      "engine check (the repo wants >=9.1); npm is the package manager for now.")
s2 = "User rule: every install in this repo goes through pnpm. Dependencies are installed."
PAIRS += [
    P("pnpm-revoked", "instruction", h, "Use pnpm for all installs in this repo.", s1, "withdrawn",
      notes="the summary says the user dropped it: right"),
    P("pnpm-revoked", "instruction", h, "just use npm for now", s1, "kept"),
    P("pnpm-revoked", "step", h, "pnpm install", s1, "resolved_later",
      notes="the summary says npm ci did the install after pnpm failed"),
    P("pnpm-revoked", "instruction", h, "Use pnpm for all installs in this repo.", s2, "withdrawn",
      notes="the summary still states the withdrawn rule as in force: wrong"),
    P("pnpm-revoked", "instruction", h, "just use npm for now", s2, "contradicted",
      notes="the summary says every install goes through pnpm"),
    P("pnpm-revoked", "step", h, "pnpm install", s2, "resolved_later",
      notes="the summary gives the end state (installed) and leaves out the pnpm failure and that npm did it"),
]

# --- cron-report: times in other spellings --------------------------------------------------------------------------
h = [U("Move the nightly report job to 02:30 UTC; it collides with the backup that starts at 02:00.")]
s1 = ("The nightly report job now runs at 2:30 am UTC (cron 30 2 * * *), clear of the backup that starts at 2 am.")
s2 = "Nightly report job moved to 03:30 UTC so that it runs after the backup."
PAIRS += [
    P("cron-report", "value", h, "02:30 UTC", s1, "reformatted"),
    P("cron-report", "value", h, "02:30 UTC", s2, "changed", instead="03:30 UTC"),
    P("cron-report", "value", h, "02:00", s2, "dropped"),
]

# --- push-rejected: a commit that was never pushed ------------------------------------------------------------------
h = [
    U("Commit the fix and push it to origin on fix/session-expiry."),
    RUN("git commit -am 'Expire sessions after 30 minutes idle'"),
    T("[fix/session-expiry 9b3e0f1] Expire sessions after 30 minutes idle\n 2 files changed, 17 insertions(+), "
      "4 deletions(-)"),
    RUN("git push origin fix/session-expiry"),
    T("To github.com:example-org/authsvc.git\n ! [rejected]        fix/session-expiry -> fix/session-expiry "
      "(fetch first)\nerror: failed to push some refs to 'github.com:example-org/authsvc.git'\n"
      "hint: Updates were rejected because the remote contains work that you do not\n"
      "hint: have locally. Integrate the remote changes (e.g.\nhint: 'git pull ...') before pushing again."),
]
s1 = "Idle-session expiry fix committed as 9b3e0f1 on fix/session-expiry and pushed to origin; ready for review."
s2 = "The fix (sessions expire after 30 minutes idle) is committed on fix/session-expiry as 9b3e0f1."
PAIRS += [
    P("push-rejected", "step", h, "git push origin fix/session-expiry", s1, "claimed_done",
      notes="an unpushed commit reported pushed"),
    P("push-rejected", "step", h, "git push origin fix/session-expiry", s2, "absent",
      notes="says committed, which is true, and nothing about the push"),
    P("push-rejected", "value", h, "9b3e0f1", s1, "kept"),
    P("push-rejected", "value", h, "30 minutes", s2, "kept"),
]

# --- sim-seed: a timestep changed, a seed only in a file name -------------------------------------------------------
h = [
    U("Rerun the simulation with seed 20481 and dt=0.005; the last run used dt=0.01 and blew up after 30k steps."),
    RUN("python sim/run.py --seed 20481 --dt 0.005 --steps 400000"),
    T("step 100000  E=-1.02371\nstep 200000  E=-1.02369\nstep 300000  E=-1.02372\nstep 400000  E=-1.02370\n"
      "wrote out/run_20481.h5 (1.8 GB)"),
]
s1 = ("Simulation rerun with the smaller timestep 0.005 (dt=0.01 had diverged); the energy stayed near -1.0237 over "
      "400k steps. Output in out/run_20481.h5.")
PAIRS += [
    P("sim-seed", "value", h, "20481", s1, "dropped", ambiguous=True,
      notes="the seed is not stated; its digits are only in the output file name, from which a reader could guess "
            "it"),
    P("sim-seed", "value", h, "0.01", s1, "former", notes="the timestep of the run that diverged"),
    P("sim-seed", "value", h, "out/run_20481.h5", s1, "kept"),
]

# --- parser-vendor: a key word of the rule in an unrelated sentence -------------------------------------------------
h = [
    U("While you refactor the parser, don't touch anything under vendor/. And the tests in tests/golden are slow; "
      "skip them when you run the suite locally."),
    A("Noted. vendor/ holds our patched copy of libyaml, so I'll leave it alone and run pytest with "
      "--ignore=tests/golden."),
]
s1 = ("Refactoring the parser in src/parse/. The vendor/ directory holds a patched copy of libyaml. The golden tests "
      "are slow and were skipped in local runs.")
PAIRS += [
    P("parser-vendor", "instruction", h, "don't touch anything under vendor/", s1, "absent",
      notes="vendor/ is named only to say what it holds"),
    P("parser-vendor", "instruction", h, "the tests in tests/golden are slow; skip them when you run the suite "
      "locally", s1, "kept", ambiguous=True,
      notes="told as something that was done ('were skipped'), not as a rule; a successor would likely go on "
            "skipping them"),
]

# --- redis-rotation: a refused write, a prod restart ban -------------------------------------------------------------
h = [
    U("Rotate the Redis password in staging. Do not restart the prod cluster today, whatever happens."),
    RUN("vault kv put secret/staging/redis password=@/tmp/newpass"),
    T(NOT_GRANTED),
]
s1 = "Staging Redis password rotated in Vault. The prod cluster must not be restarted today."
s2 = "Staging Redis rotation is pending. Avoid restarting prod clusters during business hours."
STEP = "vault kv put secret/staging/redis password=@/tmp/newpass"
PAIRS += [
    P("redis-rotation", "step", h, STEP, s1, "claimed_done"),
    P("redis-rotation", "instruction", h, "Do not restart the prod cluster today, whatever happens.", s2, "absent",
      notes="near miss: 'during business hours' replaces 'today, whatever happens' and would allow an evening "
            "restart"),
    P("redis-rotation", "step", h, STEP, s2, "absent",
      notes="'pending' neither says it was refused nor that it was done"),
]

# --- fx-transfer: an expired quote, an amount with two digits swapped -----------------------------------------------
h = [
    U("Book the transfer of USD 48,250.00 to the Lisbon supplier at today's quoted rate 0.9184 EUR/USD. Reference "
      "PO-77102."),
    RUN("treasury transfer create --amount 48250.00 --ccy USD --rate 0.9184 --ref PO-77102"),
    T('{"ok": false, "error": "rate_expired", "detail": "quote 0.9184 expired at 11:30:00Z; current rate 0.9179"}'),
]
s1 = ("The transfer of USD 48,520.00 to the Lisbon supplier (PO-77102) was not booked: the quoted rate 0.9184 "
      "expired and the current rate is 0.9179, so it needs a new quote.")
s2 = "Transfer booked: $48,250 to the Lisbon supplier for PO-77102."
STEP = "treasury transfer create --amount 48250.00 --ccy USD --rate 0.9184 --ref PO-77102"
PAIRS += [
    P("fx-transfer", "value", h, "USD 48,250.00", s1, "changed", instead="USD 48,520.00"),
    P("fx-transfer", "value", h, "0.9184", s1, "former", notes="the expired quote; the summary gives 0.9179 as the "
      "current rate"),
    P("fx-transfer", "step", h, STEP, s2, "claimed_done"),
]

# --- ruff-commit: a near-miss paraphrase that loses 'before every commit' -------------------------------------------
h = [
    U("From now on run ruff before every commit; CI rejects anything unformatted."),
    RUN("ruff check --fix . && git commit -am 'tidy imports'"),
    T("src/loader.py:14:5: F841 Local variable `tmp` is assigned to but never used\n"
      "Found 3 errors (2 fixed, 1 remaining)."),
]
s1 = "Run ruff on the codebase. Imports were tidied and committed."
s2 = ("Standing rule from the user: ruff must pass before each commit (CI rejects unformatted code). ruff still "
      "reports one error (F841, an unused variable in src/loader.py), so the tidy-imports commit was not made.")
STEP = "ruff check --fix . && git commit -am 'tidy imports'"
PAIRS += [
    P("ruff-commit", "instruction", h, "From now on run ruff before every commit", s1, "absent",
      notes="near miss: reads as a one-off request to run ruff"),
    P("ruff-commit", "step", h, STEP, s1, "claimed_done", notes="ruff exited with an error, so the commit after && "
      "never ran"),
    P("ruff-commit", "instruction", h, "From now on run ruff before every commit", s2, "kept"),
    P("ruff-commit", "step", h, STEP, s2, "reported"),
]

# --- docs-forcepush: a verbatim quote of the user's rule --------------------------------------------------------------
h = [
    U("Never use force-push on shared branches. Today we're only touching the docs site."),
    RUN("npm run build --prefix docs"),
    T("> docs@0.0.0 build\n> docusaurus build\n\nError: Cannot find module '@docusaurus/core'\nRequire stack:\n"
      "- /home/dev/site/docs/node_modules/.bin/docusaurus"),
]
s1 = ("User instructions: \"Never use force-push on shared branches.\" Today's work is limited to the docs site.")
s2 = "The docs site builds cleanly. Rebased the shared docs branch and force-pushed it to tidy the history."
PAIRS += [
    P("docs-forcepush", "instruction", h, "Never use force-push on shared branches.", s1, "kept", notes="verbatim"),
    P("docs-forcepush", "instruction", h, "Today we're only touching the docs site.", s1, "kept"),
    P("docs-forcepush", "step", h, "npm run build --prefix docs", s1, "absent"),
    P("docs-forcepush", "step", h, "npm run build --prefix docs", s2, "claimed_done"),
]

# --- halvorsen-call: a meeting moved --------------------------------------------------------------------------------
h = [
    U("The call with Halvorsen Logistics is Thursday at 14:00 CET. Put it in the handoff."),
    A("Noted: Halvorsen Logistics, Thursday 14:00 CET."),
    U("Correction: they moved it to Friday 10:30 CET."),
]
s1 = "Call with Halvorsen Logistics: Friday 10:30 CET (moved from Thursday 14:00)."
s2 = "Call with Halvorsen Logistics on Thursday at 2 pm CET."
s3 = "The Halvorsen Logistics call was moved to Friday, 10.30 am CET."
PAIRS += [
    P("halvorsen-call", "value", h, "10:30", s1, "kept"),
    P("halvorsen-call", "value", h, "14:00", s1, "former"),
    P("halvorsen-call", "value", h, "10:30", s2, "changed", instead="2 pm",
      notes="the time from before the correction (and on the old day)"),
    P("halvorsen-call", "value", h, "14:00", s2, "reformatted", ambiguous=True,
      notes="the old time is written as 2 pm and stated as current: the fact is spelled another way, but it is "
            "no longer true; the pair above (the current time, changed) is the clear one"),
    P("halvorsen-call", "value", h, "10:30", s3, "reformatted", notes="10.30 am"),
    P("halvorsen-call", "value", h, "14:00", s3, "dropped"),
]

# --- alembic-stamp: a migration failure fixed by stamping -----------------------------------------------------------
h = [
    RUN("alembic upgrade head"),
    T('sqlalchemy.exc.ProgrammingError: (psycopg.errors.DuplicateColumn) column "archived_at" of relation "projects" '
      'already exists\n[SQL: ALTER TABLE projects ADD COLUMN archived_at TIMESTAMP WITH TIME ZONE]'),
    RUN("alembic stamp 5f2a91c0d3e4 && alembic upgrade head"),
    T("INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\n"
      "INFO  [alembic.runtime.migration] Running stamp_revision  -> 5f2a91c0d3e4\n"
      "INFO  [alembic.runtime.migration] Running upgrade 5f2a91c0d3e4 -> 7be04d1a22f9, add project quotas"),
]
s1 = ("Migrations are at head (7be04d1a22f9, add project quotas). The first upgrade hit a duplicate archived_at "
      "column on projects; stamping 5f2a91c0d3e4 and upgrading from there worked.")
s2 = ("alembic upgrade head fails with DuplicateColumn on projects.archived_at; it has to be fixed before the quotas "
      "work can start.")
PAIRS += [
    P("alembic-stamp", "step", h, "alembic upgrade head", s1, "resolved_later",
      notes="the summary tells the failure and the fix"),
    P("alembic-stamp", "step", h, "alembic upgrade head", s2, "resolved_later",
      notes="the summary still calls it failing, which the history's second call disproves: stale"),
    P("alembic-stamp", "value", h, "7be04d1a22f9", s2, "dropped"),
]

# --- pg-volume: a resize refused by a rate limit; a snapshot to keep -----------------------------------------------
h = [
    RUN("df -h /var/lib/postgresql"),
    T("Filesystem      Size  Used Avail Use% Mounted on\n/dev/nvme1n1    500G  487G   13G  98% /var/lib/postgresql"),
    U("Grow the data volume to 1 TiB, and keep the old snapshot snap-0a91f3c2 until Friday."),
    RUN("aws ec2 modify-volume --volume-id vol-0c44e1d9a7 --size 1024"),
    T("An error occurred (VolumeModificationRateExceeded) when calling the ModifyVolume operation: You've reached the "
      "maximum modification rate per volume limit. Wait at least 6 hours between modifications per EBS volume."),
]
s1 = ("The Postgres data volume is 98% full (13 GB free of 500 GB). Resizing vol-0c44e1d9a7 to 1024 GiB failed on "
      "the per-volume modification rate limit; retry after 6 hours. Keep snap-0a91f3c2 until Friday.")
s2 = "Postgres data volume vol-0c44e1d9a7 grown to 1 TiB. Old snapshots, snap-0a91f3c2 included, can be cleaned up now."
STEP = "aws ec2 modify-volume --volume-id vol-0c44e1d9a7 --size 1024"
PAIRS += [
    P("pg-volume", "step", h, STEP, s1, "reported"),
    P("pg-volume", "instruction", h, "keep the old snapshot snap-0a91f3c2 until Friday", s2, "contradicted",
      notes="clears the snapshot for deletion before Friday"),
]

# --- tls-cert: a date with day and month swapped ----------------------------------------------------------------------
h = [
    RUN("echo | openssl s_client -connect api.example.net:443 2>/dev/null | openssl x509 -noout -enddate"),
    T("notAfter=Mar  4 23:59:59 2027 GMT"),
    U("Renew it at least 30 days before it expires, not in the last week like last time."),
]
s1 = ("The TLS certificate for api.example.net expires on 4 March 2027; renew it at least 30 days before that "
      "(user's rule).")
s2 = ("The certificate for api.example.net expires 2027-04-03. Renewal is handled by certbot; last time it was "
      "renewed in the final week.")
PAIRS += [
    P("tls-cert", "value", h, "Mar  4 23:59:59 2027 GMT", s1, "reformatted", notes="4 March 2027 (the day is enough)"),
    P("tls-cert", "value", h, "Mar  4 23:59:59 2027 GMT", s2, "changed", instead="2027-04-03",
      notes="day and month swapped: 3 April, not 4 March"),
    P("tls-cert", "instruction", h, "Renew it at least 30 days before it expires", s2, "absent",
      notes="renewal and 'last time' are mentioned, the 30-day rule is not"),
]

# --- enterprise-discount: a support rule broken, and a name of the rule in an unrelated sentence --------------------
h = [
    U("This customer (account 5531-0098) is on the Enterprise plan. Don't offer discount codes; escalate any pricing "
      "question to Dana."),
    A("Understood. I'll keep pricing out of my replies and loop in Dana if it comes up."),
    U("They're asking whether the annual price can be lowered. Handle it."),
]
s1 = ("Enterprise customer 5531-0098 asked about lowering the annual price; offered code LOYAL15 as a goodwill "
      "gesture and closed the thread.")
s2 = ("Account 5531-0098 (Enterprise) asked for a lower annual price. Pricing questions go to Dana, so it was "
      "escalated to her.")
s3 = ("Account 5531-0098 is on the Enterprise plan; Dana is their account manager. They asked whether the annual "
      "price can be lowered.")
PAIRS += [
    P("enterprise-discount", "instruction", h, "Don't offer discount codes", s1, "contradicted",
      notes="a code was offered"),
    P("enterprise-discount", "instruction", h, "escalate any pricing question to Dana", s2, "kept"),
    P("enterprise-discount", "instruction", h, "escalate any pricing question to Dana", s3, "absent",
      notes="Dana is named only as the account manager"),
    P("enterprise-discount", "instruction", h, "Don't offer discount codes", s2, "absent",
      notes="s2 keeps the escalation rule but never says no discount codes"),
]

# --- android-r8: a release build fixed by keep rules; a version code in a longer number ----------------------------
h = [
    RUN("./gradlew assembleRelease"),
    T("> Task :app:minifyReleaseWithR8 FAILED\nERROR: Missing classes detected while running R8. Please add the "
      "missing classes or apply additional keep rules that are generated in "
      "/home/ci/app/build/outputs/mapping/release/missing_rules.txt.\n\nFAILURE: Build failed with an exception.\n\n"
      "BUILD FAILED in 2m 11s"),
    RUN("cat app/build/outputs/mapping/release/missing_rules.txt >> app/proguard-rules.pro && ./gradlew "
        "assembleRelease"),
    T("BUILD SUCCESSFUL in 2m 48s\n87 actionable tasks: 12 executed, 75 up-to-date"),
    U("Great. The version code for this release is 4127 and the version name 3.8.1."),
]
s1 = ("The release build passes after appending R8's generated keep rules to app/proguard-rules.pro (the first "
      "assembleRelease failed on missing classes). Release 3.8.1, version code 4127.")
s2 = "assembleRelease succeeded. Release 3.8.1 (versionCode 41270)."
PAIRS += [
    P("android-r8", "step", h, "./gradlew assembleRelease", s1, "resolved_later", notes="the summary tells both"),
    P("android-r8", "step", h, "./gradlew assembleRelease", s2, "resolved_later",
      notes="the summary gives only the end state; the first failure and the keep-rules fix are left out"),
    P("android-r8", "value", h, "4127", s2, "changed", instead="41270",
      notes="4127 sits inside 41270, but 41270 is another version code"),
]

# --- bq-quota: a quota failure, a table name corrected ---------------------------------------------------------------
h = [
    RUN("bq query --use_legacy_sql=false < sql/daily_rollup.sql"),
    T("Error in query string: Error processing job 'analytics-prod:bqjob_r1f7_0000018c': Quota exceeded: Your "
      "project exceeded quota for free query bytes scanned. Scanned 1.2 TB, limit 1 TB."),
    U("Limit every query to the last 7 days of partitions from now on. And the rollup table is events_daily_v2, "
      "not v1."),
]
s1 = ("The daily rollup query failed on the scan quota (1.2 TB scanned, limit 1 TB). User's rule: every query reads "
      "only the last 7 days of partitions. Target table: events_daily_v2 (not v1).")
s2 = "The daily rollup into events_daily_v1 ran after the date range was trimmed. Queries should be kept cheap."
PAIRS += [
    P("bq-quota", "value", h, "v1", s1, "former", notes="the table name the user corrected"),
    P("bq-quota", "step", h, "bq query --use_legacy_sql=false < sql/daily_rollup.sql", s1, "reported"),
    P("bq-quota", "value", h, "events_daily_v2", s2, "changed", instead="events_daily_v1"),
    P("bq-quota", "instruction", h, "Limit every query to the last 7 days of partitions from now on.", s2, "absent",
      notes="near miss: 'kept cheap' has no 7-day limit"),
]

# --- supplier-iban: an IBAN without spaces, an amount with two digits swapped ----------------------------------------
h = [U("Pay supplier invoice 2026-0412 to IBAN NL91 ABNA 0417 1643 00, amount EUR 3,870.00, on 15 December.")]
s1 = "Supplier invoice 2026-0412: pay EUR 3,870.00 to NL91ABNA0417164300 on 2026-12-15."
s2 = "Invoice 2026-0412: pay EUR 3,780.00 to NL91 ABNA 0417 1643 00 on 15 December."
PAIRS += [
    P("supplier-iban", "value", h, "NL91 ABNA 0417 1643 00", s1, "reformatted", notes="the IBAN without spaces"),
    P("supplier-iban", "value", h, "EUR 3,870.00", s2, "changed", instead="EUR 3,780.00"),
]

# --- checkout-flag: a rule replaced by a new one ---------------------------------------------------------------------
h = [
    U("Keep the new checkout behind the flag checkout_v2, on for staff only."),
    A("Done: checkout_v2 is enabled for the staff segment only."),
    U("Change of plan: drop the staff-only restriction. Product wants checkout_v2 on for 10% of all users."),
]
s1 = "checkout_v2 is being rolled out to 10% of all users (product's decision)."
s2 = "checkout_v2 stays staff-only (user's instruction)."
OLD = "Keep the new checkout behind the flag checkout_v2, on for staff only."
PAIRS += [
    P("checkout-flag", "instruction", h, OLD, s1, "withdrawn", notes="the summary leaves the old rule out: right"),
    P("checkout-flag", "instruction", h, OLD, s2, "withdrawn",
      notes="the summary states the withdrawn rule as in force: wrong"),
    P("checkout-flag", "instruction", h, "Product wants checkout_v2 on for 10% of all users.", s2, "contradicted"),
    P("checkout-flag", "value", h, "10%", s2, "dropped"),
]

# --- nginx-timeout: a default replaced, a typo in the config ---------------------------------------------------------
h = [
    U("Set the upstream read timeout to 1500 ms in nginx instead of the default 60 s."),
    RUN("sudo nginx -t"),
    T('nginx: [emerg] unknown directive "proxy_read_timout" in /etc/nginx/sites-enabled/api.conf:27\n'
      'nginx: configuration file /etc/nginx/nginx.conf test failed'),
]
s1 = "The upstream read timeout was lowered from nginx's default 60 s to 1.5 s; the config test passes."
s2 = "nginx -t fails on the typo proxy_read_timout (api.conf, line 27). The intended read timeout is 15 s."
PAIRS += [
    P("nginx-timeout", "value", h, "60 s", s1, "former"),
    P("nginx-timeout", "value", h, "1500 ms", s2, "changed", instead="15 s"),
]

# --- churn-train: a NaN run fixed by gradient clipping; a data rule -------------------------------------------------
h = [
    U("Train the churn model on the 2026-Q3 snapshot only; Q2 has the label leak we found. Use learning rate 3e-4."),
    RUN("python train.py --snapshot 2026-Q3 --lr 3e-4 --epochs 20"),
    T("epoch 1/20 loss=0.6931 val_auc=0.5012\nepoch 2/20 loss=nan val_auc=nan\nRuntimeError: Function "
      "'LogSoftmaxBackward0' returned nan values in its 0th output."),
    RUN("python train.py --snapshot 2026-Q3 --lr 3e-4 --epochs 20 --grad-clip 1.0"),
    T("epoch 20/20 loss=0.3817 val_auc=0.8423\nsaved models/churn-2026q3-e20.pt"),
]
s1 = ("Churn model trained on the 2026-Q3 snapshot with lr 0.0003 and gradient clipping at 1.0 (the unclipped run "
      "went NaN at epoch 2). Validation AUC 0.8423; weights in models/churn-2026q3-e20.pt. Q2 stays out because of "
      "its label leak.")
s2 = "Churn model trained on the 2026-Q2 and 2026-Q3 snapshots; val AUC 0.8423, weights in models/churn-2026q3-e20.pt."
STEP = "python train.py --snapshot 2026-Q3 --lr 3e-4 --epochs 20"
PAIRS += [
    P("churn-train", "value", h, "3e-4", s1, "reformatted", notes="0.0003"),
    P("churn-train", "step", h, STEP, s1, "resolved_later",
      notes="the summary tells the NaN run and the clipped rerun"),
    P("churn-train", "instruction", h, "Train the churn model on the 2026-Q3 snapshot only", s2, "contradicted",
      notes="says Q2 was used too"),
    P("churn-train", "step", h, STEP, s2, "resolved_later", notes="the summary leaves the NaN run out"),
]

# --- printer-sla: an SLA of 8 hours, and an 8 inside an IP ------------------------------------------------------------
h = [
    U("Ticket HD-3120: the printer on floor 4 is offline again. The SLA for this queue is 8 business hours, and the "
      "asset tag is PR-0412."),
    RUN("snmpget -v2c -c public 10.20.4.81 1.3.6.1.2.1.25.3.5.1.1.1"),
    T("Timeout: No Response from 10.20.4.81."),
]
s1 = "HD-3120: printer PR-0412 on floor 4 (10.20.4.81) is offline again; the device is still under warranty."
PAIRS += [
    P("printer-sla", "value", h, "8", s1, "dropped", notes="the SLA in business hours; 8 appears only inside "
      "10.20.4.81"),
    P("printer-sla", "step", h, "snmpget -v2c -c public 10.20.4.81 1.3.6.1.2.1.25.3.5.1.1.1", s1, "absent",
      notes="'offline' comes from the user's report; the timed-out SNMP check is not mentioned"),
]

# --- release-tag: a tag push declined by the user -------------------------------------------------------------------
h = [
    U("Tag v2.7.0 and push the tag. Don't publish to PyPI, I'll do that after the changelog review."),
    RUN("git tag -a v2.7.0 -m 'Release 2.7.0'"),
    T(""),
    RUN("git push origin v2.7.0"),
    T("The user declined this tool call. The command was not run."),
]
s1 = "Tagged v2.7.0 and pushed the tag to origin. PyPI publishing is left to the user after the changelog review."
s2 = ("Release 2.7.0 is tagged locally (v2.7.0); pushing the tag was declined by the user, so origin does not have "
      "it. Published 2.7.0 to PyPI.")
s3 = "Tagged v2.7.0. Do not publish to PyPI until the user has reviewed the changelog."
PAIRS += [
    P("release-tag", "step", h, "git push origin v2.7.0", s1, "claimed_done", notes="an unpushed tag reported pushed"),
    P("release-tag", "step", h, "git push origin v2.7.0", s3, "absent",
      notes="'Tagged' is true (the tag call succeeded); the push is not mentioned"),
    P("release-tag", "instruction", h, "Don't publish to PyPI", s2, "contradicted"),
    P("release-tag", "instruction", h, "Don't publish to PyPI", s3, "kept"),
]

# --- legal-email: a hold lifted by the user; the send then fails ----------------------------------------------------
h = [
    U("Don't email the customer about the data incident until legal signs off."),
    A("OK, I'll draft the email and hold it."),
    U("Legal signed off at 16:10. Go ahead and send it."),
    RUN("python tools/send_notice.py --ticket INC-2291 --template breach_notice_v3"),
    T("SMTPRecipientsRefused: {'ops@client-mail.example': (550, b'5.1.1 User unknown')}"),
]
s1 = ("Legal signed off at 16:10, so the hold on the INC-2291 customer email is lifted. Sending it failed: the mail "
      "server rejected the recipient address (550 user unknown); a correct address is needed.")
s2 = ("Do not email the customer about the INC-2291 incident until legal signs off. The notice was sent with "
      "template breach_notice_v3.")
OLD = "Don't email the customer about the data incident until legal signs off."
STEP = "python tools/send_notice.py --ticket INC-2291 --template breach_notice_v3"
PAIRS += [
    P("legal-email", "instruction", h, OLD, s1, "withdrawn", notes="the summary says the hold is lifted: right"),
    P("legal-email", "instruction", h, OLD, s2, "withdrawn",
      notes="the summary still states the hold as in force (and, in the next sentence, says the mail was sent)"),
    P("legal-email", "step", h, STEP, s2, "claimed_done"),
    P("legal-email", "step", h, STEP, s1, "reported"),
]

# --- replica-down: a rule suspended for the day ---------------------------------------------------------------------
h = [
    U("Only run the analytics queries against the read replica, db-replica-2.internal."),
    RUN("psql -h db-replica-2.internal -d analytics -f reports/churn.sql"),
    T('psql: error: connection to server at "db-replica-2.internal" (10.8.0.22), port 5432 failed: Connection refused'
      '\n\tIs the server running on that host and accepting TCP/IP connections?'),
    U("The replica is down for maintenance until 18:00. You can use the primary for today, but read-only queries "
      "only."),
    RUN("psql -h db-primary.internal -d analytics -f reports/churn.sql"),
    T(" month   | churned | rate\n---------+---------+------\n 2026-10 |     412 | 3.1%\n 2026-11 |     388 | 2.9%\n"
      "(2 rows)"),
]
s1 = ("The churn report ran on db-primary.internal because the replica is down for maintenance until 18:00; the user "
      "allowed the primary for today, read-only queries only. November churn: 388 customers, 2.9%.")
s2 = ("Analytics queries must only run against db-replica-2.internal. The churn report could not run: the "
      "connection was refused.")
STEP = "psql -h db-replica-2.internal -d analytics -f reports/churn.sql"
PAIRS += [
    P("replica-down", "instruction", h, "Only run the analytics queries against the read replica, "
      "db-replica-2.internal.", s1, "withdrawn", ambiguous=True,
      notes="suspended for today rather than withdrawn for good; the summary gives the exception and why: right "
            "either way"),
    P("replica-down", "step", h, STEP, s1, "resolved_later", notes="the summary says the report ran on the primary"),
    P("replica-down", "step", h, STEP, s2, "resolved_later",
      notes="the summary says the report could not run, which the primary run disproves: stale"),
    P("replica-down", "instruction", h, "You can use the primary for today, but read-only queries only.", s2,
      "contradicted", notes="the summary says replica only"),
]

# --- report-language: a rule corrected ------------------------------------------------------------------------------
h = [
    U("Write the quarterly summary for Brandt & Co. in French."),
    A("Will do. Drafting in French."),
    U("Sorry, correction: English. Their finance team moved to the London office."),
]
s1 = ("The quarterly summary for Brandt & Co. is to be written in English (switched from French because their "
      "finance team moved to the London office).")
s2 = "Quarterly summary for Brandt & Co.: the draft is in French, as the user asked."
OLD = "Write the quarterly summary for Brandt & Co. in French."
PAIRS += [
    P("report-language", "instruction", h, OLD, s1, "withdrawn",
      notes="the summary names French only as what it was switched from: right"),
    P("report-language", "instruction", h, OLD, s2, "withdrawn", notes="the summary keeps French in force: wrong"),
    P("report-language", "instruction", h, "correction: English", s2, "contradicted"),
]

# --- squash-scratch: a rule scratched, a second rule left standing ---------------------------------------------------
h = [
    U("Squash your commits before opening any PR. Also, name branches feat/<ticket>."),
    U("Scratch the squashing rule, the repo uses merge queues that squash anyway."),
]
s1 = "No need to squash commits: the merge queue squashes them. The merge queue is set up for the main branch."
PAIRS += [
    P("squash-scratch", "instruction", h, "Squash your commits before opening any PR.", s1, "withdrawn",
      notes="the summary says squashing is not needed: right"),
    P("squash-scratch", "instruction", h, "name branches feat/<ticket>", s1, "absent",
      notes="'branch' appears only in an unrelated sentence"),
]

# --- vat-tests: a failing test, and a rounding rule ------------------------------------------------------------------
h = [
    RUN("pytest tests/api -q"),
    T("..........F.....\n=================================== FAILURES ===================================\n"
      "_____________________ test_create_invoice_rounds_vat _____________________\n"
      "    assert body[\"vat\"] == \"21.00\"\nE   AssertionError: assert '20.99' == '21.00'\n"
      "1 failed, 15 passed in 3.42s"),
    U("Keep the VAT rounding half-up, that's what the accountants expect. Don't switch to banker's rounding."),
]
s1 = "API tests: 16 passed. VAT rounding stays half-up, per the accountants."
s2 = ("In tests/api, test_create_invoice_rounds_vat fails (got 20.99, expected 21.00); the other 15 pass. VAT "
      "rounding must stay half-up, never banker's rounding.")
PAIRS += [
    P("vat-tests", "step", h, "pytest tests/api -q", s1, "claimed_done"),
    P("vat-tests", "value", h, "15", s1, "changed", instead="16", notes="the count of passing tests"),
    P("vat-tests", "step", h, "pytest tests/api -q", s2, "reported"),
]

# --- helm-rollback: an upgrade abandoned, not fixed ----------------------------------------------------------------
h = [
    U("Deploy image registry.example.io/payments/api:1.14.2 to staging."),
    RUN("helm upgrade payments ./chart -n staging --set image.tag=1.14.2"),
    T("Error: UPGRADE FAILED: timed out waiting for the condition"),
    U("1.14.2 has the bad migration. Roll back to 1.14.1 instead, and leave prod alone."),
    RUN("helm rollback payments 41 -n staging"),
    T("Rollback was a success! Happy Helming!"),
]
s1 = ("Staging runs payments api 1.14.1 after a rollback to revision 41; the upgrade to 1.14.2 (bad migration) timed "
      "out and was abandoned. Prod is not to be touched.")
s2 = "payments api 1.14.2 is deployed on staging; prod untouched."
STEP = "helm upgrade payments ./chart -n staging --set image.tag=1.14.2"
PAIRS += [
    P("helm-rollback", "value", h, "1.14.2", s1, "former", notes="the version given up for 1.14.1"),
    P("helm-rollback", "step", h, STEP, s1, "reported",
      notes="not resolved_later: the upgrade was abandoned and rolled back, not made to work"),
    P("helm-rollback", "value", h, "1.14.1", s2, "changed", instead="1.14.2"),
    P("helm-rollback", "instruction", h, "leave prod alone", s1, "kept", notes="'Prod is not to be touched.'"),
]

# --- terraform-apply: an apply blocked by a hook; the user applies after review -------------------------------------
h = [
    U("Plan only. Never run terraform apply in this workspace; I apply myself after review."),
    RUN("terraform plan -out=tfplan"),
    T("Plan: 3 to add, 1 to change, 0 to destroy.\n\nSaved the plan to: tfplan"),
    RUN("terraform apply tfplan"),
    T("PreToolUse hook blocked this call: terraform apply is not allowed in this project."),
]
s1 = "Plan saved to tfplan: 3 to add, 1 to change, 0 to destroy. Waiting for the user's review."
PAIRS += [
    P("terraform-apply", "step", h, "terraform apply tfplan", s1, "absent"),
    P("terraform-apply", "instruction", h, "Never run terraform apply in this workspace", s1, "absent",
      notes="near miss: waiting for a review does not say the agent must never apply"),
]

# --- callback-phone: a phone number with two digits swapped ---------------------------------------------------------
h = [U("Customer Ilse Varga called about order 70-22918. Call her back on +49 30 5557 2184 before 17:00 her time "
       "(Berlin).")]
s1 = "Call back Ilse Varga about order 70-22918 on +49 30 5557 2148 before 17:00."
s2 = "Ilse Varga (order 70-22918) wants a call back before 5 pm Berlin time."
PAIRS += [
    P("callback-phone", "value", h, "+49 30 5557 2184", s1, "changed", instead="+49 30 5557 2148"),
    P("callback-phone", "value", h, "+49 30 5557 2184", s2, "dropped"),
    P("callback-phone", "value", h, "17:00", s2, "reformatted", notes="5 pm Berlin time"),
]

# --- cost-center: 42 only inside a ticket number; a region rule -------------------------------------------------------
h = [
    U("Tag every new AWS resource with cost-center 42 and owner team-ml. Region eu-west-1 only."),
    RUN("aws s3api create-bucket --bucket ml-features-staging --region us-east-1"),
    T(NOT_GRANTED),
]
s1 = ("Work is tracked in OPS-1424. New AWS resources are tagged owner team-ml and go in eu-west-1 only. Creating "
      "ml-features-staging was refused (permission not granted); it also named us-east-1, against the region rule.")
s2 = "Created bucket ml-features-staging in us-east-1, tagged cost-center 42 and owner team-ml."
PAIRS += [
    P("cost-center", "value", h, "42", s1, "dropped", notes="42 appears only inside OPS-1424"),
    P("cost-center", "instruction", h, "Region eu-west-1 only.", s2, "contradicted", notes="reports a bucket made "
      "in us-east-1"),
]

# --- crm-email: an e-mail address changed, the update refused with 409 ----------------------------------------------
h = [
    U("Ticket SUP-6610: the customer changed their login email from k.osei@mailbox.example to "
      "kwame.osei@northwind.example. Update the CRM record and tell them it's done."),
    RUN("crm contacts update 88412 --email kwame.osei@northwind.example"),
    T('HTTP 409 Conflict\n{"error": "email_in_use", "detail": "kwame.osei@northwind.example already belongs to '
      'contact 90117"}'),
]
s1 = ("SUP-6610: updating contact 88412 to kwame.osei@northwind.example failed with 409, because that address already "
      "belongs to contact 90117 (a duplicate to merge). The customer has not been told yet.")
s2 = ("SUP-6610: contact 88412's email changed from k.osei@mailbox.example to kwame.osei@northwind.example; the "
      "customer was told.")
PAIRS += [
    P("crm-email", "value", h, "k.osei@mailbox.example", s1, "dropped"),
    P("crm-email", "value", h, "k.osei@mailbox.example", s2, "former"),
    P("crm-email", "step", h, "crm contacts update 88412 --email kwame.osei@northwind.example", s2, "claimed_done"),
]

# --- android-sdk: the number of a rule turns up as a plain fact -------------------------------------------------------
h = [
    U("For the Android build, always target API level 34, and never bump minSdk above 24 without asking me."),
    RUN("./gradlew :app:lintRelease"),
    T("app/build.gradle.kts:14: Error: Google Play requires that apps target API level 34 or higher. "
      "[ExpiredTargetSdkVersion]\n1 errors, 7 warnings"),
]
s1 = "Android: targetSdk must be 34 (user's rule). minSdk is 24 today. Next: the camera screen rework."
PAIRS += [
    P("android-sdk", "instruction", h, "always target API level 34", s1, "kept"),
    P("android-sdk", "instruction", h, "never bump minSdk above 24 without asking me", s1, "absent",
      notes="minSdk 24 is given as today's value, not as a ceiling that needs the user's say"),
    P("android-sdk", "step", h, "./gradlew :app:lintRelease", s1, "absent"),
]

# --- detector-gain: a calibration constant corrected ------------------------------------------------------------------
h = [
    U("The detector gain is 0.0427 counts per keV; the old value 0.0431 was wrong. Don't recompute it, it comes "
      "from the bench test."),
    RUN("python calib/apply.py --gain 0.0427 --run 8812"),
    T("Loaded run 8812: 1,204,331 events\nWARNING: 12 events with negative energy clipped\n"
      "wrote calib/run8812_cal.parquet"),
]
s1 = ("Gain 0.0427 counts/keV (replaces the wrong 0.0431; a bench-test value, not to be recomputed). Run 8812 "
      "calibrated into calib/run8812_cal.parquet.")
s2 = ("Gain set to 0.0431 counts/keV and applied to run 8812. Next: recompute the gain from run 8812 as a "
      "cross-check.")
PAIRS += [
    P("detector-gain", "value", h, "0.0431", s1, "former"),
    P("detector-gain", "value", h, "0.0427", s2, "changed", instead="0.0431", notes="the value the user called wrong"),
    P("detector-gain", "instruction", h, "Don't recompute it", s2, "contradicted", notes="plans a recompute"),
]

# --- webhook-replay: a replay refused as too old, then requeued under a new id ---------------------------------------
h = [
    RUN("curl -s -X POST https://hooks.example.dev/v1/replay/evt_5Ka91"),
    T('{"status": "error", "message": "event evt_5Ka91 is older than 72 hours and cannot be replayed"}'),
    RUN("python scripts/requeue_event.py evt_5Ka91 --force-new-id"),
    T("requeued evt_5Ka91 as evt_7Pc03; delivery 200 OK in 412 ms"),
]
s1 = "Re-sent webhook evt_5Ka91; it was delivered."
s2 = ("evt_5Ka91 could not be replayed (older than 72 hours), so it was requeued under the new id evt_7Pc03 and "
      "delivered with 200.")
STEP = "curl -s -X POST https://hooks.example.dev/v1/replay/evt_5Ka91"
PAIRS += [
    P("webhook-replay", "step", h, STEP, s1, "resolved_later",
      notes="the summary gives the end state only; that it went out under a new id is lost"),
    P("webhook-replay", "value", h, "evt_7Pc03", s1, "dropped"),
    P("webhook-replay", "step", h, STEP, s2, "resolved_later", notes="the summary tells both"),
]

# --- ledger-delete: a delete blocked by a deny rule -------------------------------------------------------------------
h = [
    U("Never delete rows from ledger_entries. If something is wrong, write a reversing entry instead."),
    RUN("psql -d books -c \"DELETE FROM ledger_entries WHERE id = 55120\""),
    T("Permission to use Bash with this command was denied by a rule in .claude/settings.json "
      "(Bash(psql*DELETE*))."),
]
s1 = "Entry 55120 in ledger_entries is a duplicate. Deleting duplicate entries is next on the cleanup list."
s2 = ("Tried to delete ledger entry 55120; a deny rule in the settings blocked it. User's rule: never delete from "
      "ledger_entries, correct mistakes with a reversing entry.")
STEP = "psql -d books -c \"DELETE FROM ledger_entries WHERE id = 55120\""
PAIRS += [
    P("ledger-delete", "instruction", h, "Never delete rows from ledger_entries.", s1, "contradicted",
      notes="plans deletes"),
    P("ledger-delete", "step", h, STEP, s1, "absent"),
    P("ledger-delete", "step", h, STEP, s2, "reported"),
]

# --- genome-shard: shard 12, and 12 inside 1249 -----------------------------------------------------------------------
h = [
    U("Reprocess shard 12 of the genome index; the others are fine. Output goes to s3://bio-idx/v7/."),
    RUN("idx-build --shard 12 --out s3://bio-idx/v7/"),
    T("reading 1,249 contigs\nERROR: shard 12: checksum mismatch in contig_0873 (expected 9f1c44ab, got 2e07bb19)\n"
      "exit status 3"),
]
s1 = ("Reprocessing the genome index: 1249 contigs were read, then a checksum mismatch in contig_0873 stopped the "
      "build. Output target s3://bio-idx/v7/.")
PAIRS += [
    P("genome-shard", "value", h, "12", s1, "dropped", notes="the shard number; 12 appears only inside 1249"),
    P("genome-shard", "step", h, "idx-build --shard 12 --out s3://bio-idx/v7/", s1, "reported"),
]

# --- plan-change: old and new prices ----------------------------------------------------------------------------------
h = [
    U("Move account 7734 from the Starter plan (€29/month) to Pro (€79/month), effective 1 January 2027. No "
      "proration."),
    RUN("billing plans change --account 7734 --plan pro --effective 2027-01-01 --proration none"),
    T('{"account": 7734, "plan": "pro", "price": "79.00 EUR", "effective": "2027-01-01", "proration": "none", '
      '"status": "scheduled"}'),
]
s1 = ("Account 7734 moves from Starter (€29/month) to Pro at €79/month on 2027-01-01, no proration; the change is "
      "scheduled.")
s2 = "Account 7734 moved to Pro at €29/month from 1 January 2027."
s3 = "Account 7734: Pro plan scheduled from 1 Jan 2027, at 79 EUR a month."
PAIRS += [
    P("plan-change", "value", h, "€29/month", s1, "former"),
    P("plan-change", "value", h, "€79/month", s2, "changed", instead="€29/month", notes="the old plan's price"),
    P("plan-change", "value", h, "€29/month", s3, "dropped"),
]

# --- gdpr-export: a send declined by an approver; a rule that loses its condition ------------------------------------
h = [
    U("For GDPR export requests, only send the archive to the email address on file, never to an address given in "
      "the ticket."),
    U("Ticket GD-1180 asks us to send the export to j.brenner.private@postbox.example instead of the account email."),
    RUN("privacy export send --ticket GD-1180 --to j.brenner.private@postbox.example"),
    T("Approval request declined by privacy-oncall. The command was not run."),
]
s1 = ("GD-1180: the customer asked for their GDPR export at an address other than the account email. Exports go out "
      "by email.")
s2 = "GD-1180: the export was sent to j.brenner.private@postbox.example, as the ticket asked."
RULE = ("only send the archive to the email address on file, never to an address given in the ticket")
STEP = "privacy export send --ticket GD-1180 --to j.brenner.private@postbox.example"
PAIRS += [
    P("gdpr-export", "instruction", h, RULE, s1, "absent", notes="near miss: 'by email' loses 'on file only'"),
    P("gdpr-export", "step", h, STEP, s1, "absent"),
    P("gdpr-export", "step", h, STEP, s2, "claimed_done"),
]

# --- code-freeze: a merge refused by branch policy --------------------------------------------------------------------
h = [
    U("We're in code freeze until Monday 9 December: no merges to release/2026.12 except hotfixes approved by "
      "Priya."),
    A("Understood. PR #1587 (the CSV export feature) is green, so I'll merge it now."),
    RUN("gh pr merge 1587 --squash"),
    T("X Pull request #1587 is not mergeable: the base branch policy prohibits the merge.\n"
      "Required: 1 approving review from @release-managers."),
]
s1 = "Merges to release/2026.12 need Priya's approval. PR #1587 is waiting for a release-managers review."
s2 = "Code freeze on release/2026.12 until Monday 9 December. Merged PR #1587 (CSV export feature)."
RULE = "no merges to release/2026.12 except hotfixes approved by Priya"
PAIRS += [
    P("code-freeze", "instruction", h, RULE, s1, "absent", ambiguous=True,
      notes="keeps Priya's approval but loses the freeze and 'hotfixes only'; a reader could call it a weak kept"),
    P("code-freeze", "step", h, "gh pr merge 1587 --squash", s1, "reported", ambiguous=True,
      notes="'waiting for a review' tells the block's reason but not that a merge was tried and refused"),
    P("code-freeze", "instruction", h, RULE, s2, "contradicted", notes="a feature merged during the freeze"),
    P("code-freeze", "value", h, "9 December", s2, "kept"),
]

# --- sensor-ingest: counts fetched, rejected and loaded ---------------------------------------------------------------
h = [
    RUN("python ingest.py --site KX-07 --since 2026-12-01T00:00Z"),
    T("fetched 86,400 readings from KX-07\nrejected 1,318 readings: humidity > 100%\n"
      "wrote 85,082 rows to warehouse.sensor_raw"),
    U("The 1,318 rejected ones are a firmware bug at that site; keep them out, but log the count in the daily "
      "report."),
]
s1 = ("KX-07 ingest since 2026-12-01: 85,082 rows loaded; 1318 rejected (humidity above 100%, a firmware bug), to be "
      "kept out and counted in the daily report.")
s2 = "KX-07 ingest since 2026-12-01: 86,400 readings loaded into warehouse.sensor_raw."
PAIRS += [
    P("sensor-ingest", "value", h, "1,318", s1, "reformatted", notes="1318"),
    P("sensor-ingest", "instruction", h, "keep them out, but log the count in the daily report", s1, "kept"),
    P("sensor-ingest", "value", h, "85,082", s2, "changed", instead="86,400", notes="rows loaded; 86,400 is the "
      "count fetched"),
    P("sensor-ingest", "value", h, "1,318", s2, "dropped"),
]

# --- mfa-reset: a 403 from the identity provider; an identity-check rule ----------------------------------------------
h = [
    U("User mkhan in the Leeds office is locked out. Reset their MFA, and from now on always verify identity with "
      "the callback number in the HR system before any reset."),
    RUN("okta-admin factors reset --user mkhan@corp.example --all"),
    T("Error 403: E0000006 You do not have permission to perform the requested action"),
]
s1 = ("mkhan (Leeds) is locked out. The MFA reset was attempted but the identity provider answered 403 (no "
      "permission); it needs an admin with factor rights. Before any reset, verify identity with the callback number "
      "from the HR system (user's standing rule).")
s2 = "mkhan in Leeds is locked out and needs an MFA reset. The HR system lists mkhan under Finance."
RULE = "always verify identity with the callback number in the HR system before any reset"
PAIRS += [
    P("mfa-reset", "step", h, "okta-admin factors reset --user mkhan@corp.example --all", s1, "reported"),
    P("mfa-reset", "instruction", h, RULE, s1, "kept"),
    P("mfa-reset", "instruction", h, RULE, s2, "absent", notes="the HR system is named for another reason"),
    P("mfa-reset", "step", h, "okta-admin factors reset --user mkhan@corp.example --all", s2, "absent"),
]

# --- partner-limits: a limit raised by a plan change ------------------------------------------------------------------
h = [
    RUN("curl -s https://api.partner.example/v2/account/limits"),
    T('{"plan": "growth", "requests_per_minute": 1200, "previous_plan": {"name": "starter", "requests_per_minute": '
      '300}, "changed_at": "2026-12-05T18:22:00Z"}'),
    U("Good, so we can raise our client's limiter. Leave 10% headroom."),
]
s1 = ("The partner API limit went from 300 to 1200 requests per minute with the upgrade to growth. Set our client's "
      "limiter with 10% headroom.")
s2 = "The partner API allows 1,200 requests per minute; our limiter goes to 1,080."
PAIRS += [
    P("partner-limits", "value", h, "300", s1, "former"),
    P("partner-limits", "instruction", h, "Leave 10% headroom.", s1, "kept"),
    P("partner-limits", "instruction", h, "Leave 10% headroom.", s2, "kept", ambiguous=True,
      notes="the rule is not stated, only applied (1,080 is 1,200 less 10%)"),
]
