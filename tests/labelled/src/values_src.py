"""Exact values: hand-written snippets of turns (user, assistant, tool call, tool result) and the facts a compacted
state must keep. Invented text throughout; no line comes from a real transcript.

Each entry: V(role, text, values, not_values, context=..., tool=..., notes=...)
  values:     (text, kind, referent) or (text, kind, referent, {"also": [...], "current": False, "ambiguous": True})
              "also" lists restatements of the same fact in the snippet (they are written out as not_values with
              why "restatement" and "of" the value).
  not_values: (text, why) or (text, why, note)
"""

A = "assistant"
U = "user"
T = "tool_result"
C = "tool_call"


def V(role, text, values, not_values=(), context=None, tool=None, notes=None):
    return {"role": role, "text": text, "values": list(values), "not_values": list(not_values),
            "context": context, "tool": tool, "notes": notes}


ITEMS = [
    V(U, "Customer on ticket SUP-44817 wants a refund of $1,249.00 for order ORD-58213; the admin panel shows the "
         "order total as 1249.00 and the CSV export has 1249.0.",
      [("SUP-44817", "id", "support ticket"),
       ("$1,249.00", "amount", "refund the customer asks for (= order total)", {"also": ["1249.00", "1249.0"]}),
       ("ORD-58213", "id", "order to refund")],
      notes="Three spellings of one amount: one fact, one value."),

    V(T, 'psql: error: connection to server at "db-stage-04.internal" (10.20.4.17), port 5432 failed: FATAL:  '
         'password authentication failed for user "report_ro"',
      [("db-stage-04.internal", "host", "database server the agent tried"),
       ("10.20.4.17", "ip", "address of that database server"),
       ("5432", "port", "database port")],
      [("04", "host_fragment")],
      tool="Bash"),

    V(T, 'Traceback (most recent call last):\n  File "/srv/app/billing/invoice.py", line 212, in apply_discount\n'
         '    total = subtotal * (1 - rate)\nTypeError: unsupported operand type(s) for -: \'int\' and \'str\'',
      [("/srv/app/billing/invoice.py", "path", "file where the TypeError is raised")],
      [("212", "stack_line"), ("1", "code_literal")],
      tool="Bash"),

    V(A, "I bumped requests from 2.31.0 to 2.32.3 in requirements.txt and pinned urllib3 to 1.26.18, because the "
         "vendored botocore still needs the 1.x line.",
      [("2.31.0", "version", "old version of requests", {"current": False}),
       ("2.32.3", "version", "new version of requests"),
       ("requirements.txt", "path", "file that was edited"),
       ("1.26.18", "version", "version urllib3 is pinned to")],
      [("urllib3", "name_with_digits"), ("1.x", "restatement", "1.26.18: the series the pin belongs to")],
      notes="The old version is a value of the session (it says what changed) but no longer current."),

    V(T, "commit 9f2c4e1b7a3d5c8e0f1a2b3c4d5e6f7a8b9c0d1e\nAuthor: Dana Ruiz <dana.ruiz@example.org>\n"
         "Date:   Tue Mar 11 16:42:07 2025 +0100\n\n    Fix rounding of VAT on credit notes (#1873)",
      [("9f2c4e1b7a3d5c8e0f1a2b3c4d5e6f7a8b9c0d1e", "hash", "commit that fixed VAT rounding"),
       ("dana.ruiz@example.org", "email", "author of that commit"),
       ("Tue Mar 11 16:42:07 2025 +0100", "datetime", "when that commit was made"),
       ("#1873", "id", "pull request the commit came from")],
      context="The user asked who fixed the VAT rounding and when.", tool="Bash",
      notes="The date line is one value; `Mar 11`, `16:42:07` or `2025` taken alone are fragments of it."),

    V(U, "My card was charged twice on 3 March, €89.90 each time. The bank shows references 7731-0042 and 7731-0043.",
      [("3 March", "date", "day of the double charge"),
       ("€89.90", "amount", "amount of each charge"),
       ("7731-0042", "id", "bank reference of the first charge"),
       ("7731-0043", "id", "bank reference of the second charge")]),

    V(T, "NAME                        READY   STATUS             RESTARTS   AGE\n"
         "api-7d9f8b6c5d-x2kqp        0/1     CrashLoopBackOff   14         37m\n"
         "worker-5c6d7e8f9-mm4rt      1/1     Running            0          2d",
      [("api-7d9f8b6c5d-x2kqp", "id", "the crashing pod"),
       ("14", "count", "restarts of the crashing pod")],
      [("0/1", "incidental", "readiness column; the status word says it"),
       ("37m", "incidental", "pod age"),
       ("worker-5c6d7e8f9-mm4rt", "incidental", "a healthy pod nobody asked about"),
       ("1/1", "incidental"), ("0", "incidental"), ("2d", "incidental")],
      context="The user asked why the API is down.", tool="Bash",
      notes="A table row nobody turns to is not a fact of the session."),

    V(U, "The deploy window is Thursday 14:00-15:30 UTC, and the code freeze starts 2025-06-19.",
      [("14:00", "time", "start of the deploy window"),
       ("15:30", "time", "end of the deploy window"),
       ("2025-06-19", "date", "start of the code freeze")]),

    V(A, "The flaky test is test_export_csv in tests/test_reports.py: it fails about 1 in 8 runs (12.5%) because it "
         "depends on dict order.",
      [("tests/test_reports.py", "path", "file of the flaky test"),
       ("12.5%", "percentage", "failure rate of the flaky test", {"also": ["1 in 8"]})],
      notes="`1 in 8` and `12.5%` are one fact."),

    V(T, "HTTP/2 301\nlocation: https://docs.acme-internal.dev/v3/auth/tokens\ncontent-length: 0\n"
         "date: Wed, 12 Mar 2025 10:15:44 GMT",
      [("301", "code", "status of the old docs address (moved permanently)"),
       ("https://docs.acme-internal.dev/v3/auth/tokens", "url", "where the old docs page now lives")],
      [("HTTP/2", "label", "protocol name"), ("0", "incidental", "content length of a redirect"),
       ("Wed, 12 Mar 2025 10:15:44 GMT", "incidental", "response date header")],
      tool="Bash", context="curl -I on the old documentation link."),

    V(U, "Our Stripe key is sk_live_51Hx9QmL2vZ8kT4pRw7yN3bC0dE6fG1hJ, use it to check why payment "
         "pi_3OqK8L2eZvKb1x0C1a2B3c4D failed.",
      [("pi_3OqK8L2eZvKb1x0C1a2B3c4D", "id", "the failed payment")],
      [("sk_live_51Hx9QmL2vZ8kT4pRw7yN3bC0dE6fG1hJ", "secret", "pasted API key: masked, never a value to keep")]),

    V(T, "added 312 packages, and audited 313 packages in 9s\n\n48 packages are looking for funding\n"
         "  run `npm fund` for details\n\n2 high severity vulnerabilities",
      [("2", "count", "high-severity vulnerabilities npm found")],
      [("312", "incidental"), ("313", "incidental"), ("9s", "incidental"), ("48", "incidental")],
      context="The user asked the agent to install and report anything worrying.", tool="Bash",
      notes="A single digit can be the one fact that matters."),

    V(U, "Set the worker pool to 8 and the request timeout to 30s; we started seeing 504s at about 25 seconds last "
         "night.",
      [("8", "count", "worker pool size to set"),
       ("30s", "duration", "request timeout to set"),
       ("504", "code", "gateway errors seen last night", {"also": ["504s"]}),
       ("25 seconds", "duration", "when the 504s started to appear")]),

    V(A, "Migration 0042_add_invoice_index.py is applied on staging but not on prod; prod is still at 0039.",
      [("0042_add_invoice_index.py", "path", "migration applied on staging only"),
       ("0039", "id", "latest migration applied on prod")]),

    V(T, "Step 7/12 : RUN pip install -r requirements.txt\n ---> Running in 3f9a1c2b7d4e\n"
         "ERROR: Could not find a version that satisfies the requirement torch==2.1.0+cu118 (from versions: 2.2.0, "
         "2.2.1, 2.3.0)",
      [("requirements.txt", "path", "requirements file the image installs"),
       ("2.1.0+cu118", "version", "torch version the requirements ask for"),
       ("2.2.0", "version", "lowest torch version the index offers"),
       ("2.2.1", "version", "a torch version the index offers"),
       ("2.3.0", "version", "highest torch version the index offers")],
      [("7/12", "incidental", "build step counter"),
       ("3f9a1c2b7d4e", "incidental", "throw-away intermediate container")],
      tool="Bash", notes="The offered versions matter: the fix picks one of them."),

    V(U, "The invoice is INV-2025-0311 for 4,800 USD, due 30 April 2025, payable to accounts@northwind-supplies.com.",
      [("INV-2025-0311", "id", "the invoice"),
       ("4,800 USD", "amount", "invoice total"),
       ("30 April 2025", "date", "due date of the invoice"),
       ("accounts@northwind-supplies.com", "email", "where the payment goes")]),

    V(T, "TypeError: Cannot read properties of undefined (reading 'map')\n"
         "    at renderRows (/app/src/components/Table.tsx:88:21)\n"
         "    at Table (/app/src/components/Table.tsx:41:10)\n"
         "    at renderWithHooks (/app/node_modules/react-dom/cjs/react-dom.development.js:16305:18)",
      [("/app/src/components/Table.tsx", "path", "component where the error happens")],
      [("88:21", "stack_line", "line and column, not a time"), ("41:10", "stack_line"),
       ("16305:18", "stack_line"),
       ("/app/node_modules/react-dom/cjs/react-dom.development.js", "incidental", "library frame")],
      tool="Bash", notes="`88:21` looks like a time; it is a line and column."),

    V(U, "Bump the public API to v2.4, and keep the old v2.3 endpoints alive until 1 July.",
      [("v2.4", "version", "new public API version"),
       ("v2.3", "version", "old API version kept alive"),
       ("1 July", "date", "when the v2.3 endpoints may go")]),

    V(T, '  # aws_db_instance.main will be updated in-place\n  ~ resource "aws_db_instance" "main" {\n'
         '      ~ allocated_storage = 100 -> 250\n      ~ instance_class    = "db.t3.medium" -> "db.r6g.large"\n'
         '        id                = "prod-ledger-db"\n    }\n\nPlan: 0 to add, 1 to change, 0 to destroy.',
      [("100", "size", "current storage of the ledger database (GB)", {"current": False}),
       ("250", "size", "planned storage of the ledger database (GB)"),
       ("db.t3.medium", "id", "current instance class", {"current": False}),
       ("db.r6g.large", "id", "planned instance class")],
      [("0 to add, 1 to change, 0 to destroy", "restatement", "the plan's summary of the one change above")],
      tool="Bash"),

    V(A, "Done: I created the S3 bucket acme-logs-euw1-2025 in eu-west-1 with a 90-day lifecycle rule.",
      [("acme-logs-euw1-2025", "id", "the new bucket"),
       ("eu-west-1", "id", "region of the bucket"),
       ("90-day", "duration", "lifecycle (expiry) of objects in the bucket")],
      [("S3", "name_with_digits", "product name")]),

    V(T, '{"id": "cus_Q8rT2mVx91", "email": "l.okafor@example.net", "balance": -4500, "currency": "gbp", '
         '"created": 1709251200}',
      [("cus_Q8rT2mVx91", "id", "customer record"),
       ("l.okafor@example.net", "email", "customer's e-mail"),
       ("-4500", "amount", "customer balance in pence (a credit of 45 pounds)")],
      [("1709251200", "incidental", "account creation time; nobody in the session uses it")],
      tool="get_customer", context="A support agent looks up a customer who asks about a credit."),

    V(U, "Please use port 8443 for the admin UI; 8080 is taken by the legacy proxy.",
      [("8443", "port", "port for the admin UI"),
       ("8080", "port", "port the legacy proxy holds (not to use)")]),

    V(T, "-rw-r--r--  1 deploy deploy   18432 Mar  9 02:10 backup-2025-03-09.sql.gz\n"
         "-rw-r--r--  1 deploy deploy  204800 Mar  8 02:10 backup-2025-03-08.sql.gz",
      [("18432", "size", "size of last night's backup (bytes)"),
       ("backup-2025-03-09.sql.gz", "path", "last night's backup"),
       ("204800", "size", "size of the previous backup (bytes)"),
       ("backup-2025-03-08.sql.gz", "path", "the previous backup")],
      [("1", "incidental", "link count"), ("Mar  9 02:10", "incidental", "mtime; the file name carries the date"),
       ("Mar  8 02:10", "incidental")],
      context="The user asked why last night's backup is so small.", tool="Bash"),

    V(U, "Ship it as 3.0.0-rc.2, not rc.1: that tag was already pushed and deleted, npm won't take it again.",
      [("3.0.0-rc.2", "version", "version to release"),
       ("rc.1", "version", "burned tag that must not be reused")],
      notes="rc.1 is short for 3.0.0-rc.1; it is a fact (do not reuse), not a restatement."),

    V(T, '{"number": 482, "state": "open", "mergeable_state": "blocked", "head": {"ref": "fix/tz-offsets", '
         '"sha": "c41d9e07a2b5f3e8d6c1b0a9f8e7d6c5b4a3f2e1"}, "html_url": "https://github.com/acme/ledger/pull/482"}',
      [("482", "id", "pull request number"),
       ("fix/tz-offsets", "branch", "branch of the pull request"),
       ("c41d9e07a2b5f3e8d6c1b0a9f8e7d6c5b4a3f2e1", "hash", "head commit of the pull request"),
       ("https://github.com/acme/ledger/pull/482", "url", "link to the pull request")],
      tool="github_get_pull",
      notes="The URL and the number are two values of different kinds; the 482 inside the URL is part of it."),

    V(A, "Median p95 latency dropped from 840 ms to 310 ms after adding the index, a 63% cut.",
      [("840 ms", "duration", "p95 latency before the index", {"current": False}),
       ("310 ms", "duration", "p95 latency after the index"),
       ("63%", "percentage", "reduction in p95 latency")],
      [("p95", "label", "name of the percentile")]),

    V(U, "Last 4 of the card are 4417, expiry 09/27. Can you check whether the refund of $56.20 went through?",
      [("4417", "id", "last four digits of the customer's card"),
       ("09/27", "date", "card expiry (month/year)"),
       ("$56.20", "amount", "refund to check")],
      [("4", "label", "part of the phrase 'last 4'")]),

    V(T, "Filesystem      Size  Used Avail Use% Mounted on\n/dev/nvme0n1p1   80G   79G  1.0G  99% /\n"
         "/dev/nvme1n1    500G  120G  380G  24% /data",
      [("99%", "percentage", "root filesystem in use"),
       ("1.0G", "size", "space left on the root filesystem"),
       ("/data", "path", "mount with room to move Docker's files to"),
       ("380G", "size", "space free on /data")],
      [("/dev/nvme0n1p1", "incidental", "device name"), ("/dev/nvme1n1", "incidental"), ("80G", "incidental"),
       ("79G", "incidental"), ("500G", "incidental"), ("120G", "incidental"), ("24%", "incidental")],
      context="The root disk is full and the user asks where Docker's data can go.", tool="Bash",
      notes="/data is a one-part path: a value here although the current rule's path shape needs two parts."),

    V(U, "Account 00417-2231 belongs to Harlow & Sons; their contract renews 2026-01-01 at £2,150/month.",
      [("00417-2231", "id", "customer account"),
       ("2026-01-01", "date", "contract renewal date"),
       ("£2,150", "amount", "monthly fee at renewal")]),

    V(A, "The client retries up to MAX_RETRIES=5 times, with a backoff that starts at 0.5s and doubles.",
      [("5", "count", "maximum retries"),
       ("0.5s", "duration", "first backoff delay")],
      [("MAX_RETRIES", "label", "setting name")]),

    V(T, "Name: pydantic\nVersion: 1.10.13\nSummary: Data validation using Python type hints\n"
         "Location: /opt/venv/lib/python3.11/site-packages\nRequires: typing-extensions",
      [("1.10.13", "version", "installed pydantic"),
       ("/opt/venv/lib/python3.11/site-packages", "path", "environment pydantic is installed in")],
      [("python3.11", "part_of_value", "inside the path")],
      context="Validation broke after an upgrade; the user asks which pydantic is really installed.", tool="Bash"),

    V(U, "Our SLA is 99.95% monthly uptime. We were at 99.81% in February, so credit them 10% of the $3,400 bill.",
      [("99.95%", "percentage", "promised monthly uptime"),
       ("99.81%", "percentage", "uptime reached in February"),
       ("10%", "percentage", "share of the bill to credit"),
       ("$3,400", "amount", "February bill")]),

    V(T, " order_id | status   |  amount | updated_at\n----------+----------+---------+---------------------\n"
         "    58213 | refunded |  500.00 | 2025-03-14 09:12:03\n    58214 | pending  | 1249.00 | 2025-03-14 09:13:47\n"
         "(2 rows)",
      [("58213", "id", "order that was refunded"),
       ("500.00", "amount", "refund recorded on order 58213"),
       ("58214", "id", "order whose refund is pending"),
       ("1249.00", "amount", "refund pending on order 58214")],
      [("2025-03-14 09:12:03", "incidental", "row update time", ), ("2025-03-14 09:13:47", "incidental"),
       ("2 rows", "incidental")],
      context="The agent checks which refunds went through.", tool="run_sql",
      notes="Amounts without a currency sign are still amounts here (the column says so)."),

    V(A, "To confirm: the refund you approved is $500, not the full 1,249, right?",
      [("$500", "amount", "refund the user approved"),
       ("1,249", "amount", "full order amount, not approved for refund")]),

    V(U, "Use Node 20.11.1. The CI image is node:20.11.1-bookworm and Volta pins 20.11.1 as well.",
      [("20.11.1", "version", "Node version to use"),
       ("node:20.11.1-bookworm", "id", "CI container image")]),

    V(T, '{"error": {"code": "rate_limited", "message": "Too many requests", "retry_after": 37}, '
         '"request_id": "req_7f3e91ab24c0"}',
      [("37", "duration", "seconds to wait before retrying"),
       ("req_7f3e91ab24c0", "id", "request id to quote to the provider's support")],
      tool="create_invoice"),

    V(U, "Here's the .env from staging:\nDATABASE_URL=postgres://app:Tr0ub4dor-3x@10.0.3.12:5432/orders\n"
         "REDIS_URL=redis://10.0.3.20:6379/2\nJWT_SECRET=9f8e7d6c5b4a39281706f5e4d3c2b1a0\n"
         "Why can't the worker reach Redis?",
      [(".env", "path", "staging settings file"),
       ("postgres://app:Tr0ub4dor-3x@10.0.3.12:5432/orders", "url",
        "staging database URL (holds a password: to be kept only with it masked)"),
       ("redis://10.0.3.20:6379/2", "url", "staging Redis endpoint the worker cannot reach")],
      [("Tr0ub4dor-3x", "secret", "database password inside the URL"),
       ("10.0.3.12", "part_of_value"), ("5432", "part_of_value"),
       ("9f8e7d6c5b4a39281706f5e4d3c2b1a0", "secret", "JWT signing secret; looks like a digest, is not one"),
       ("DATABASE_URL", "label"), ("REDIS_URL", "label"), ("JWT_SECRET", "label")],
      notes="The database URL is one value whose password part is a secret: a state keeps it masked "
            "(postgres://app:[masked]@10.0.3.12:5432/orders); host and port alone are fragments of it."),

    V(A, "Rolled back to build #1417 (commit 5e7a9c1). Build #1418 is the one with the broken migration.",
      [("#1417", "id", "build now running"),
       ("5e7a9c1", "hash", "commit of build #1417"),
       ("#1418", "id", "build with the broken migration")]),

    V(T, "zsh: segmentation fault (core dumped)  ./bin/render --threads 16 scenes/harbour_v2.blend\n[1]    48213",
      [("./bin/render", "path", "program that crashed"),
       ("16", "count", "render threads requested"),
       ("scenes/harbour_v2.blend", "path", "scene file being rendered")],
      [("[1]", "incidental", "shell job number"), ("48213", "pid_or_address", "process id")],
      tool="Bash", notes="The command string is not a value; the file, the program and the setting inside it are."),

    V(U, "Ticket #8812: the customer says code SPRING25 took off 15% instead of 25%.",
      [("#8812", "id", "support ticket"),
       ("SPRING25", "id", "discount code"),
       ("15%", "percentage", "discount actually applied"),
       ("25%", "percentage", "discount the code should give")],
      [("25", "part_of_value", "inside SPRING25")]),

    V(T, "PING 172.31.8.44 (172.31.8.44) 56(84) bytes of data.\n64 bytes from 172.31.8.44: icmp_seq=1 ttl=63 "
         "time=0.412 ms\n\n--- 172.31.8.44 ping statistics ---\n1 packets transmitted, 1 received, 0% packet loss",
      [("172.31.8.44", "ip", "database host being checked")],
      [("56(84)", "incidental"), ("64", "incidental"), ("icmp_seq=1", "incidental"), ("ttl=63", "incidental"),
       ("0.412 ms", "incidental"), ("1 packets transmitted, 1 received, 0% packet loss", "incidental")],
      context="The user asked only whether the database host answers.", tool="Bash"),

    V(A, "The cron entry `30 2 * * *` runs the job at 02:30 UTC every day, which is 03:30 in Berlin in winter.",
      [("02:30", "time", "daily run time of the job (UTC)", {"also": ["30 2 * * *", "03:30"]})],
      notes="The cron expression and the Berlin time restate 02:30 UTC."),

    V(T, "FAILED tests/test_tax.py::test_vat_reverse_charge - AssertionError: assert 19.0 == 0.0\n"
         "FAILED tests/test_tax.py::test_vat_rounding - AssertionError: assert 104.99 == 105.0\n"
         "==== 2 failed, 30 passed, 1 skipped in 12.84s ====",
      [("tests/test_tax.py", "path", "file of the failing tests"),
       ("19.0", "number", "VAT the reverse-charge test got"),
       ("0.0", "number", "VAT the reverse-charge test expects"),
       ("104.99", "number", "total the rounding test got"),
       ("105.0", "number", "total the rounding test expects"),
       ("2", "count", "failed tests"),
       ("30", "count", "passed tests")],
      [("1 skipped", "incidental"), ("12.84s", "incidental")],
      tool="Bash"),

    V(U, "I'm on macOS 14.4 with an M2, and python3 --version says 3.12.2.",
      [("14.4", "version", "user's macOS version"),
       ("3.12.2", "version", "user's Python version"),
       ("M2", "id", "user's chip", {"ambiguous": True})],
      [("python3", "command")],
      notes="M2 names hardware: a fact about the environment, but a product name; marked ambiguous."),

    V(T, "fatal: unable to access 'https://git.acme.io/platform/infra.git/': The requested URL returned error: 403",
      [("https://git.acme.io/platform/infra.git/", "url", "repository the agent could not clone"),
       ("403", "code", "status the git server returned")],
      tool="Bash"),

    V(U, "Ship to 14 Rue des Tanneurs, 67000 Strasbourg. It's 2 boxes, 14.2 kg in total.",
      [("14 Rue des Tanneurs, 67000 Strasbourg", "address", "delivery address"),
       ("2", "count", "number of boxes"),
       ("14.2 kg", "size", "total weight")],
      [("14", "part_of_value", "street number inside the address"),
       ("67000", "part_of_value", "postcode inside the address")],
      notes="The address is one fact; its street number and postcode taken alone are fragments."),

    V(A, "Heads-up: the Makefile target build-arm64 calls go1.22 explicitly, but your GOTOOLCHAIN is go1.21.6.",
      [("go1.22", "version", "Go version the Makefile needs"),
       ("go1.21.6", "version", "Go version the user has")],
      [("build-arm64", "label", "make target name")]),

    V(T, "<--- Last few GCs --->\n[18342:0x5e1c2a0]   412331 ms: Mark-Compact 4042.1 (4135.6) -> 4031.7 (4137.3) MB\n"
         "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
      [],
      [("18342", "pid_or_address"), ("0x5e1c2a0", "pid_or_address"), ("412331 ms", "incidental"),
       ("4042.1", "incidental"), ("4135.6", "incidental"), ("4031.7", "incidental"), ("4137.3", "incidental")],
      tool="Bash", notes="No value: the fact is the out-of-memory failure, which is a step outcome."),

    V(U, "The meeting moved to Tue 18 March, 9:30 am CET (it was 11:00).",
      [("18 March", "date", "day of the meeting"),
       ("9:30 am", "time", "new meeting time"),
       ("11:00", "time", "old meeting time", {"current": False})],
      notes="The old time is superseded: a state may keep it only as the former time."),

    V(T, '{\n    "UserId": "AIDA4EXAMPLEXQ7ZK3N2",\n    "Account": "402918374651",\n'
         '    "Arn": "arn:aws:iam::402918374651:user/ci-deployer"\n}',
      [("402918374651", "id", "AWS account the CI credentials belong to"),
       ("arn:aws:iam::402918374651:user/ci-deployer", "id", "identity the CI runs as")],
      [("AIDA4EXAMPLEXQ7ZK3N2", "incidental", "internal user id, never used again")],
      tool="Bash"),

    V(A, "Line 57 of settings.py set DEBUG = True for production; I changed it to False.",
      [("settings.py", "path", "file that was edited"),
       ("57", "line", "line of the edit", {"ambiguous": True})],
      notes="A line number the agent names as the place of an edit is arguably a fact (unlike a stack trace's); "
            "marked ambiguous."),

    V(U, "token is ghp_R7tY2uI9oP3aS5dF8gH1jK4lZ6xC0vB2nM7q, repo is acme/ledger-api, please open the PR against "
         "release/2.8",
      [("acme/ledger-api", "id", "repository"),
       ("release/2.8", "branch", "base branch of the pull request")],
      [("ghp_R7tY2uI9oP3aS5dF8gH1jK4lZ6xC0vB2nM7q", "secret")]),

    V(T, "date,sku,units,revenue_eur\n2025-02-01,SKU-00981,14,421.40\n2025-02-01,SKU-01107,3,89.97",
      [],
      [("2025-02-01", "incidental", "data row"), ("SKU-00981", "incidental"), ("14", "incidental"),
       ("421.40", "incidental"), ("SKU-01107", "incidental"), ("3", "incidental"), ("89.97", "incidental")],
      context="The first rows of a 40,000-row export the agent is about to sum.", tool="Bash",
      notes="Cells of a data file the agent is processing are data, not facts of the session; the sum will be."),

    V(U, "Between 10:05 and 10:20 the checkout error rate hit 7.5%; normally it stays under 0.3%.",
      [("10:05", "time", "start of the incident"),
       ("10:20", "time", "end of the incident"),
       ("7.5%", "percentage", "checkout error rate during the incident"),
       ("0.3%", "percentage", "normal checkout error rate")]),

    V(A, "I opened issue #2291 and linked it to epic PLAT-77; the estimate is 2 sprints.",
      [("#2291", "id", "new issue"),
       ("PLAT-77", "id", "epic the issue belongs to"),
       ("2 sprints", "duration", "estimate for the issue")]),

    V(T, "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/@acme%2fui-kit - Not found\n"
         "npm ERR! 404  '@acme/ui-kit@^4.2.0' is not in this registry.",
      [("404", "code", "registry answer: package not found", {"also": ["E404"]}),
       ("@acme/ui-kit@^4.2.0", "id", "package and version range that could not be found")],
      [("https://registry.npmjs.org/@acme%2fui-kit", "incidental", "npm's own request address; restates the package")],
      tool="Bash", notes="The package spec is one value; `^4.2.0` or `@acme/ui-kit` alone are fragments of it."),

    V(U, "Budget for this quarter is 12k EUR and we've spent 9,870 EUR so far.",
      [("12k EUR", "amount", "quarter's budget"),
       ("9,870 EUR", "amount", "spent so far this quarter")]),

    V(T, "To github.com:acme/ledger-api.git\n ! [remote rejected] main -> main (protected branch hook declined)\n"
         "error: failed to push some refs to 'github.com:acme/ledger-api.git'",
      [("github.com:acme/ledger-api.git", "url", "remote the push went to")],
      tool="Bash", notes="No digit anywhere; the remote's address is the one value."),

    V(A, "Your plan renews on the 14th at $29/month; a downgrade to Basic ($12/month) takes effect next cycle.",
      [("14th", "date", "day of the month the plan renews"),
       ("$29", "amount", "current monthly price"),
       ("$12", "amount", "monthly price of Basic")],
      notes="An ordinal can be a date."),

    V(T, 'Traceback (most recent call last):\n  File "scripts/reconcile.py", line 88, in <module>\n    main()\n'
         '  File "scripts/reconcile.py", line 61, in main\n    raise ValueError(f"ledger mismatch: expected '
         '{expected}, got {got}")\nValueError: ledger mismatch: expected 18230.55, got 18203.55',
      [("scripts/reconcile.py", "path", "script that failed"),
       ("18230.55", "number", "ledger total expected"),
       ("18203.55", "number", "ledger total found")],
      [("88", "stack_line"), ("61", "stack_line")],
      tool="Bash"),

    V(U, "The vendor's IBAN is DE44 5001 0517 5407 3249 31. Please double-check it before paying invoice 7781.",
      [("DE44 5001 0517 5407 3249 31", "id", "vendor's bank account"),
       ("7781", "id", "invoice to pay")],
      [("5001", "part_of_value"), ("0517", "part_of_value"), ("5407", "part_of_value"), ("3249", "part_of_value")],
      notes="An IBAN written in groups is one value."),

    V(A, "sha256 of the release tarball: 3b7c0f2e9a81d4c6b5e7f90a1d2c3b4a5e6f708192a3b4c5d6e7f8091a2b3c4d, the same "
         "as on the downloads page.",
      [("3b7c0f2e9a81d4c6b5e7f90a1d2c3b4a5e6f708192a3b4c5d6e7f8091a2b3c4d", "hash", "digest of the release tarball")],
      [("sha256", "algorithm")]),

    V(T, "Run 8812634501 completed with conclusion: failure (took 6m 41s)\nJob 'test (3.11)' failed at step 'pytest'",
      [("8812634501", "id", "CI run that failed"),
       ("3.11", "version", "Python version of the failing job")],
      [("6m 41s", "incidental")],
      tool="Bash"),

    V(U, "We're a team of 6, each seat is $18 a month billed annually, so $1,296 a year.",
      [("6", "count", "seats"),
       ("$18", "amount", "price per seat per month"),
       ("$1,296", "amount", "yearly total")],
      notes="The yearly total is derived but stated: a separate fact a state may be asked for."),

    V(T, "CONTAINER ID   IMAGE             STATUS                  PORTS\n"
         "a3f9c2e1b7d4   acme/api:1.14.2   Up 3 hours (unhealthy)  0.0.0.0:8080->8080/tcp",
      [("a3f9c2e1b7d4", "id", "unhealthy container"),
       ("acme/api:1.14.2", "id", "image (and version) the container runs"),
       ("8080", "port", "port the API is published on")],
      [("1.14.2", "part_of_value", "inside the image name"), ("Up 3 hours", "incidental"),
       ("0.0.0.0", "incidental", "bind-all address"), ("8080/tcp", "restatement", "8080")],
      context="The user asks which API version is running and why it is unhealthy.", tool="Bash"),

    V(A, "I'll use the v1 route /api/v1/orders/{id}/refunds; v2 needs OAuth2 scopes we don't have.",
      [("/api/v1/orders/{id}/refunds", "path", "refund route the agent will use", {"also": ["v1"]}),
       ("v2", "version", "API version that cannot be used")],
      [("OAuth2", "name_with_digits")]),

    V(U, "Fix the date parser: '03/04/2025' must be read as 3 April, not March 4. We're in the UK.",
      [("03/04/2025", "date", "example date the parser misreads", {"also": ["3 April"]})],
      [("March 4", "example", "the wrong reading, named to reject it")],
      notes="The rejected reading is not a value of the session."),

    V(T, 'HTTP 500 Internal Server Error\n{"detail": "upstream timeout after 30000ms", "trace_id": '
         '"4bf92f3577b34da6a3ce929d0e0e4736"}',
      [("500", "code", "status of the failed call"),
       ("30000ms", "duration", "upstream timeout"),
       ("4bf92f3577b34da6a3ce929d0e0e4736", "id", "trace to look up in the tracing tool")],
      tool="http_request"),

    V(A, "There are 3 environments (dev, staging, prod) with 14 secrets each; 2 of the prod ones expire on "
         "2025-04-01.",
      [("3", "count", "environments"),
       ("14", "count", "secrets per environment"),
       ("2", "count", "prod secrets about to expire"),
       ("2025-04-01", "date", "expiry of those prod secrets")]),

    V(U, "Call me on +44 7700 900123 after 5pm, not before.",
      [("+44 7700 900123", "phone", "user's phone number"),
       ("5pm", "time", "earliest time to call")],
      [("7700", "part_of_value"), ("900123", "part_of_value")]),

    V(T, "Service [billing-api] revision [billing-api-00042-vix] has been deployed and is serving 100 percent of "
         "traffic.\nService URL: https://billing-api-5xk2m7q3ra-ew.a.run.app",
      [("billing-api-00042-vix", "id", "deployed revision"),
       ("https://billing-api-5xk2m7q3ra-ew.a.run.app", "url", "service address")],
      [("100 percent", "incidental", "traffic share, the default")],
      tool="Bash"),

    V(U, "This is the one line from the logs: 2025-03-14T09:12:03.418Z ERROR [worker-3] job 77120 failed: deadline "
         "exceeded (timeout=120s)",
      [("2025-03-14T09:12:03.418Z", "datetime", "when job 77120 failed"),
       ("worker-3", "id", "worker that ran the job"),
       ("77120", "id", "failed job"),
       ("120s", "duration", "job timeout")],
      notes="A single log line the user picks out: its stamp is the failure time, not noise."),

    V(A, "I updated CHANGELOG.md under 1.9.0 (unreleased) and moved the 1.8.2 entries below it.",
      [("CHANGELOG.md", "path", "file edited"),
       ("1.9.0", "version", "next release"),
       ("1.8.2", "version", "previous release")]),

    V(T, "  48213 data/events-2025-03.jsonl",
      [("48213", "count", "events recorded in March"),
       ("data/events-2025-03.jsonl", "path", "March events file")],
      context="The user asked how many events were logged in March.", tool="Bash"),

    V(U, "From the screenshot: balance 0.00, pending 312.75, available -312.75. That can't be right.",
      [("0.00", "amount", "account balance"),
       ("312.75", "amount", "pending amount"),
       ("-312.75", "amount", "available amount")],
      notes="-312.75 is a separate fact from 312.75 (another referent, another sign): not a restatement."),

    V(A, "I set max_connections = 200 in postgresql.conf and pool_size=20 for each of the 8 app workers, 160 in "
         "all, leaving 40 spare.",
      [("200", "count", "Postgres connection limit"),
       ("postgresql.conf", "path", "file edited"),
       ("20", "count", "pool size per worker"),
       ("8", "count", "app workers"),
       ("160", "count", "connections the workers can hold"),
       ("40", "count", "spare connections")],
      [("max_connections", "label"), ("pool_size", "label")]),

    V(T, " 3 files changed, 41 insertions(+), 7 deletions(-)",
      [],
      [("3", "incidental"), ("41", "incidental"), ("7", "incidental")],
      tool="Bash", context="git diff --stat before a commit; the session never refers to these counts."),

    V(U, "My order number is 112-4839201-5527301. It says delivered on 11/03 but nothing arrived.",
      [("112-4839201-5527301", "id", "customer's order"),
       ("11/03", "date", "claimed delivery date")],
      notes="11/03 without a year is still a date; which way round it reads is the session's locale."),

    V(T, "notAfter=Apr  2 23:59:59 2025 GMT",
      [("Apr  2 23:59:59 2025 GMT", "datetime", "certificate expiry")],
      tool="Bash", notes="Two spaces before the day are part of openssl's format; the whole stamp is one value."),

    V(A, r"The pattern ^\d{3}-\d{4}$ only accepts 7-digit numbers such as 555-0142, so the customer's 555-01428 "
         r"is rejected.",
      [("555-01428", "id", "customer's number that the pattern rejects")],
      [(r"^\d{3}-\d{4}$", "code_literal"), ("7-digit", "label"), ("555-0142", "example")]),

    V(U, "Use the test card 4242 4242 4242 4242 with any future expiry, for example 12/34.",
      [("4242 4242 4242 4242", "id", "test card to use")],
      [("12/34", "example", "any future expiry will do")]),

    V(T, "  VITE v5.1.4  ready in 412 ms\n\n  ->  Local:   http://127.0.0.1:5173/\n  ->  Network: use --host to expose",
      [("http://127.0.0.1:5173/", "url", "local dev server")],
      [("v5.1.4", "incidental", "tool's own version banner"), ("412 ms", "incidental")],
      tool="Bash"),

    V(A, "Option A costs about $40/month and option B about $65/month; you picked B.",
      [("$40", "amount", "monthly cost of option A (not chosen)"),
       ("$65", "amount", "monthly cost of option B (chosen)")]),

    V(U, "Can you grep for ERR_0x1F in logs/2025-03-*.log?",
      [("ERR_0x1F", "id", "error code to search for"),
       ("logs/2025-03-*.log", "path", "log files to search")]),

    V(A, "I renamed STRIPE_KEY to STRIPE_SECRET_KEY in .env.example and docker-compose.yml.",
      [(".env.example", "path", "file edited"),
       ("docker-compose.yml", "path", "file edited")],
      notes="No digits; the labels are setting names (out of scope, not listed)."),

    V(U, "Please refund 2 of the 3 mugs (SKU-7731, £14.50 each) and keep the teapot.",
      [("2", "count", "mugs to refund"),
       ("3", "count", "mugs ordered"),
       ("SKU-7731", "id", "product to refund"),
       ("£14.50", "amount", "price of each mug")]),

    V(A, "Tag v5.0.0 was cut from 7f1e2d3 on 2025-03-02; npm shows 5.0.0 published 3 days later.",
      [("v5.0.0", "version", "release tag", {"also": ["5.0.0"]}),
       ("7f1e2d3", "hash", "commit the tag points at"),
       ("2025-03-02", "date", "when the tag was cut"),
       ("3 days", "duration", "delay before the npm publish")]),

    V(U, "The timezone is America/Sao_Paulo (UTC-3), not UTC.",
      [("America/Sao_Paulo", "id", "timezone to use", {"also": ["UTC-3"]})]),

    V(T, "Slave_IO_Running: Yes\nSlave_SQL_Running: Yes\nSeconds_Behind_Master: 1843",
      [("1843", "duration", "replica lag in seconds")],
      tool="run_sql", context="The user asked how far the replica is behind."),

    V(U, "Refund limit is now 250 dollars per order, up from 200.",
      [("250 dollars", "amount", "refund limit per order"),
       ("200", "amount", "old refund limit", {"current": False})]),

    V(T, "Successfully built 4f7c2a91be03\nSuccessfully tagged registry.acme.io/payments/worker:2025.03.14-1",
      [("4f7c2a91be03", "id", "image id built"),
       ("registry.acme.io/payments/worker:2025.03.14-1", "id", "tag of the new image")],
      [("2025.03.14-1", "part_of_value", "tag suffix; not a version or a date on its own")],
      tool="Bash"),

    V(A, "The job processed 1,204 of 1,250 rows (96.3%); the 46 it skipped have a null customer_id.",
      [("1,204", "count", "rows processed"),
       ("1,250", "count", "rows in the input"),
       ("96.3%", "percentage", "share processed"),
       ("46", "count", "rows skipped")],
      [("customer_id", "label")]),

    V(U, "Ping me at ops-oncall@harbourline.io, or page through PagerDuty service P7X2KQ if it's after 22:00.",
      [("ops-oncall@harbourline.io", "email", "contact address"),
       ("P7X2KQ", "id", "PagerDuty service to page"),
       ("22:00", "time", "time after which to page instead")]),

    V(T, "Error: Request failed with status code 429\n    at createError (/app/node_modules/axios/lib/core/createError.js:16:15)\n"
         "    at settle (/app/node_modules/axios/lib/core/settle.js:17:12)",
      [("429", "code", "rate-limit answer from the API")],
      [("/app/node_modules/axios/lib/core/createError.js", "incidental", "library frame"), ("16:15", "stack_line"),
       ("/app/node_modules/axios/lib/core/settle.js", "incidental", "library frame"), ("17:12", "stack_line")],
      tool="Bash"),

    V(A, "I split the 2.4 GB dump into 8 parts of about 300 MB and uploaded them to s3://acme-exports/2025-03/.",
      [("2.4 GB", "size", "size of the dump"),
       ("8", "count", "parts"),
       ("300 MB", "size", "size of each part"),
       ("s3://acme-exports/2025-03/", "url", "where the parts were uploaded")]),

    V(U, "The discount is 12.5 percent, not 15 — someone typed it wrong on the quote.",
      [("12.5 percent", "percentage", "correct discount"),
       ("15", "percentage", "wrong discount on the quote", {"current": False})]),

    V(T, "HEAD is now at 3c9e1f0 Merge pull request #455 from acme/hotfix-1.14.3",
      [("3c9e1f0", "hash", "commit checked out"),
       ("#455", "id", "pull request merged there"),
       ("acme/hotfix-1.14.3", "branch", "branch of that pull request")],
      [("1.14.3", "part_of_value", "inside the branch name")],
      tool="Bash"),

    V(A, "The SQL you gave joins on orders.id = 7; I assume you meant the order with id 7 only for the test, so "
         "I used 58213 for the real run.",
      [("7", "id", "order used in the user's test query"),
       ("58213", "id", "order used for the real run")]),

    # --- second batch --------------------------------------------------------------------------------------------
    V(U, "The staging cluster is eks-stage-2 in us-east-2; node group ng-7f3a has 6 m5.xlarge nodes.",
      [("eks-stage-2", "id", "staging cluster"),
       ("us-east-2", "id", "region of the staging cluster"),
       ("ng-7f3a", "id", "node group"),
       ("6", "count", "nodes in the group"),
       ("m5.xlarge", "id", "instance type of the nodes")]),

    V(T, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4",
      [("e3b0c44298fc1c149afbf4c8996fb92427ae41e4", "hash", "commit being deployed")],
      tool="Bash", context="git rev-parse HEAD, run to record which commit goes out."),

    V(A, "I'll set the cache TTL to 300 seconds (5 minutes) and cap each entry at 64 KB.",
      [("300 seconds", "duration", "cache TTL", {"also": ["5 minutes"]}),
       ("64 KB", "size", "maximum cache entry size")]),

    V(U, "Invoice totals are off by exactly 0.01 on about 3% of invoices since v4.12.0 went out on 2 Feb.",
      [("0.01", "amount", "size of the error on each affected invoice"),
       ("3%", "percentage", "share of invoices affected"),
       ("v4.12.0", "version", "release that introduced the error"),
       ("2 Feb", "date", "when that release went out")]),

    V(T, '{"event": "charge.dispute.created", "id": "evt_1PqR7sT", "data": {"amount": 7999, "currency": "usd", '
         '"reason": "fraudulent", "evidence_due_by": 1712016000}}',
      [("evt_1PqR7sT", "id", "dispute event"),
       ("7999", "amount", "disputed amount in cents ($79.99)"),
       ("1712016000", "datetime", "deadline for the dispute evidence")],
      tool="get_event", context="A support agent prepares the evidence for a card dispute.",
      notes="Unlike a record's creation stamp, this timestamp is a deadline the session turns on."),

    V(U, "Use python 3.11.8 in the Dockerfile; the python:3.11-slim tag keeps drifting.",
      [("3.11.8", "version", "Python version to pin"),
       ("python:3.11-slim", "id", "base image tag that drifts (to replace)")]),

    V(A, "The bucket policy allows GET only from 203.0.113.0/24, and your office address 198.51.100.23 is outside "
         "that range.",
      [("203.0.113.0/24", "ip", "range the bucket policy allows"),
       ("198.51.100.23", "ip", "user's office address")]),

    V(T, "sent 1,048,576 bytes  received 35 bytes  349,537.00 bytes/sec\ntotal size is 1,048,576  speedup is 1.00",
      [("1,048,576 bytes", "size", "size of the copied fixture", {"also": ["1,048,576"]})],
      [("35 bytes", "incidental"), ("349,537.00", "incidental"), ("1.00", "incidental")],
      tool="Bash", context="rsync of the 1 MiB test fixture the user asked to copy."),

    V(U, "Order ORD-60017 was placed on 2025-03-01: 3 x £24.99 plus £4.95 shipping, £79.92 in total.",
      [("ORD-60017", "id", "the order"),
       ("2025-03-01", "date", "order date"),
       ("3", "count", "items ordered"),
       ("£24.99", "amount", "price per item"),
       ("£4.95", "amount", "shipping"),
       ("£79.92", "amount", "order total")]),

    V(T, "WARNING: The requested image's platform (linux/amd64) does not match the detected host platform "
         "(linux/arm64/v8) and no specific platform was requested",
      [("linux/amd64", "id", "platform of the image"),
       ("linux/arm64/v8", "id", "platform of the host")],
      tool="Bash"),

    V(A, "The p99 for /checkout is 1.8s against a 750ms budget; the slowest span is the tax call at 1.1s.",
      [("/checkout", "path", "endpoint measured"),
       ("1.8s", "duration", "p99 latency of /checkout"),
       ("750ms", "duration", "latency budget"),
       ("1.1s", "duration", "time of the tax call")],
      [("p99", "label")], notes="/checkout is a one-part path: a value here."),

    V(U, "Here are the keys if you need them: AKIA2QX7LMN4PZ8RT3WV / r8Tq2Lm9Vx4Kp7Wz1Ns6Hd3Fy5Bc0Jg8Qe2Ua4Xo. The "
         "bucket is acme-reports-2024.",
      [("acme-reports-2024", "id", "bucket the agent needs")],
      [("AKIA2QX7LMN4PZ8RT3WV", "secret", "access key id"),
       ("r8Tq2Lm9Vx4Kp7Wz1Ns6Hd3Fy5Bc0Jg8Qe2Ua4Xo", "secret", "secret access key")]),

    V(T, "HTTP/1.1 429 Too Many Requests\nRetry-After: 120\nX-RateLimit-Limit: 5000\nX-RateLimit-Remaining: 0\n"
         "X-RateLimit-Reset: 1710410400",
      [("429", "code", "rate-limit answer"),
       ("120", "duration", "seconds to wait before retrying"),
       ("5000", "count", "hourly request limit"),
       ("1710410400", "datetime", "when the limit resets")],
      [("HTTP/1.1", "label"), ("0", "incidental", "restates the 429")],
      tool="http_request"),

    V(U, "2FA has to be enforced on all 37 admin accounts by the end of Q2.",
      [("37", "count", "admin accounts"),
       ("end of Q2", "date", "deadline")],
      [("2FA", "name_with_digits")]),

    V(A, "Fixed in 2 places: src/tax/vat.py:88 and src/tax/rounding.py:12.",
      [("src/tax/vat.py", "path", "file fixed"),
       ("88", "line", "line fixed in vat.py", {"ambiguous": True}),
       ("src/tax/rounding.py", "path", "file fixed"),
       ("12", "line", "line fixed in rounding.py", {"ambiguous": True})],
      [("2", "restatement", "counts the two places listed")]),

    V(T, "4.7G\t./node_modules\n312M\t./dist\n18M\t./src",
      [("4.7G", "size", "size of node_modules"),
       ("./node_modules", "path", "the folder that takes the space")],
      [("312M", "incidental"), ("./dist", "incidental"), ("18M", "incidental"), ("./src", "incidental")],
      tool="Bash", context="The user asked which folder makes the checkout so big."),

    V(U, "Dates in the report should be DD/MM/YYYY, for example 31/12/2025.",
      [],
      [("31/12/2025", "example", "illustrates the format; not a date of the session")],
      notes="The format is the fact, and it is words, not a value."),

    V(T, "Your refund of $42.50 (ref RF-88213) has been approved and will reach your card in 5-10 business days.",
      [("$42.50", "amount", "approved refund"),
       ("RF-88213", "id", "refund reference"),
       ("5-10 business days", "duration", "time until the money arrives")],
      tool="refund_status"),

    V(A, "Scaled the api deployment from 3 to 6 replicas; the autoscaler's maximum is 12.",
      [("3", "count", "replicas before", {"current": False}),
       ("6", "count", "replicas now"),
       ("12", "count", "autoscaler maximum")]),

    V(U, "Postgres is 15.6 on prod but 16.2 on staging, so a pg_dump from staging won't restore on prod.",
      [("15.6", "version", "Postgres on prod"),
       ("16.2", "version", "Postgres on staging")],
      notes="A dotted pair with no 'version' word before it is still a version here."),

    V(T, "  1) tests/e2e/checkout.spec.ts:42:7 > checkout > applies coupon (3.2s)\n    Error: expect(received).toBe("
         "expected)\n    Expected: \"\u20ac10.00\"\n    Received: \"\u20ac1.00\"",
      [("tests/e2e/checkout.spec.ts", "path", "failing end-to-end test"),
       ("\u20ac10.00", "amount", "discount the test expects"),
       ("\u20ac1.00", "amount", "discount the app gave")],
      [("1)", "incidental", "list number"), ("42:7", "stack_line"), ("3.2s", "incidental")],
      tool="Bash"),

    V(U, "Please answer ticket 4471 next. She has waited since 09:15 and is on Premium, which promises a reply "
         "within 1 hour.",
      [("4471", "id", "ticket to answer"),
       ("09:15", "time", "when the customer started waiting"),
       ("1 hour", "duration", "Premium response promise")]),
]
