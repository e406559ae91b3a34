"""Exact values, the NEW held-out half (issue 43): hand-written snippets of turns (user, assistant, tool result) and
the facts a compacted state must keep.

Written and labelled on 2026-12-06 by labeller A, who had not read the rules (scripts/), protocol/SESSIONS.md, the
tests or the closing notes of issues: only tests/labelled/README.md (whose section 1 the labels follow), the format
of the older sources, and the notes on session formats. Invented text throughout; no line comes from a real
transcript, paper or repository. Keys, tokens and passwords are made up.

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
    # --- tool results ------------------------------------------------------------------------------------------
    V(T, "12:04:31  Finished running 14 table models, 3 tests in 0 hours 2 minutes and 7.41 seconds (127.41s).\n"
         "12:04:31  Completed with 1 error and 0 warnings:\n"
         "12:04:31  Failure in test unique_orders_order_id (models/marts/schema.yml)\n"
         "12:04:31    Got 38 results, configured to fail if != 0",
      [("models/marts/schema.yml", "path", "file that declares the failing uniqueness test"),
       ("38", "count", "duplicate order ids the test found")],
      [("12:04:31", "incidental", "log stamp of every line"), ("14", "incidental"), ("3", "incidental"),
       ("0 hours 2 minutes and 7.41 seconds", "incidental", "elapsed time"),
       ("127.41s", "incidental", "the same elapsed time in seconds"),
       ("1 error and 0 warnings", "incidental", "the summary of the one failure named on the next line"),
       ("!= 0", "code_literal", "the test's threshold as dbt prints it")],
      context="The user asked why the nightly dbt build fails.", tool="Bash"),

    V(T, "> Task :app:compileReleaseKotlin FAILED\n"
         "e: file:///Users/mika/dev/tally-android/app/src/main/java/io/tally/sync/SyncWorker.kt:57:23 Unresolved "
         "reference: setExpedited\n\nFAILURE: Build failed with an exception.\n\nBUILD FAILED in 1m 12s\n"
         "43 actionable tasks: 9 executed, 34 up-to-date",
      [("/Users/mika/dev/tally-android/app/src/main/java/io/tally/sync/SyncWorker.kt", "path",
        "source file that does not compile")],
      [("57:23", "stack_line", "line and column of the compiler's error, printed as a trace prints them"),
       ("1m 12s", "incidental"), ("43", "incidental"), ("9", "incidental"), ("34", "incidental")],
      context="The release build of the Android app broke after a dependency bump.", tool="Bash",
      notes="The file:// prefix is Gradle's spelling of the path; the path is the value."),

    V(T, " account_no | period  |  opening   |  closing\n------------+---------+------------+------------\n"
         " 4010-220   | 2026-10 | 182,400.00 | 179,915.35\n(1 row)",
      [("4010-220", "id", "revenue account"),
       ("2026-10", "date", "accounting period (October 2026)"),
       ("179,915.35", "amount", "October closing balance of the account")],
      [("182,400.00", "incidental", "opening balance; only the closing one was asked for"),
       ("1 row", "incidental")],
      context="The controller asked for the October closing balance of revenue account 4010-220.", tool="run_sql"),

    V(T, '{"ticket": {"id": 90417, "subject": "Charged after cancelling", "requester": "p.nakamura@example.com", '
         '"status": "open", "priority": "high", "created_at": "2026-11-28T07:41:09Z", "custom_fields": {"plan": '
         '"team_annual", "amount_charged": "149.00", "cancelled_on": "2026-11-20"}}}',
      [("90417", "id", "support ticket"),
       ("p.nakamura@example.com", "email", "customer who wrote in"),
       ("149.00", "amount", "charge the customer disputes"),
       ("2026-11-20", "date", "day the customer cancelled (before the charge)")],
      [("2026-11-28T07:41:09Z", "incidental", "ticket creation time; nobody uses it")],
      context="A support agent checks whether a customer was charged after cancelling.", tool="get_ticket"),

    V(T, "     1\timport os\n     2\t\n     3\tBATCH_SIZE = int(os.getenv(\"BATCH_SIZE\", \"500\"))\n"
         "     4\tMAX_WORKERS = 8\n     5\tRETRY_DELAY_S = 2.5\n     6\tS3_PREFIX = \"raw/2026/\"\n",
      [("500", "count", "current default batch size, the one the user wants raised")],
      [("1", "incidental", "line-number prefix of the file view"), ("2", "incidental", "line-number prefix"),
       ("3", "incidental", "line-number prefix"), ("4", "incidental", "line-number prefix"),
       ("5", "incidental", "line-number prefix"), ("6", "incidental", "line-number prefix"),
       ("8", "code_literal", "worker count in the file; not what the session is about"),
       ("2.5", "code_literal"), ("S3_PREFIX", "label"),
       ("raw/2026/", "code_literal", "a path literal in code the session does not turn on")],
      context="The user asked the agent to raise the batch size of the loader; the agent reads settings.py.",
      tool="Read",
      notes="The numbers at the start of each line are the viewer's line numbers, not values."),

    V(T, "Customer: Ilse Brandt\nAccount: ACC-00-7741\nPhone: +31 6 1234 5678\nLast login: 2026-12-01 22:14\n"
         "Open cases: 2 (CS-5520, CS-5531)\nLifetime value: \u20ac3,412.80",
      [("ACC-00-7741", "id", "customer account"),
       ("+31 6 1234 5678", "phone", "phone number on file, to compare with the caller's"),
       ("2", "count", "open cases of the customer"),
       ("CS-5520", "id", "first open case"),
       ("CS-5531", "id", "second open case")],
      [("6", "part_of_value"), ("1234", "part_of_value"), ("5678", "part_of_value"),
       ("2026-12-01 22:14", "incidental", "last login; not asked"),
       ("\u20ac3,412.80", "incidental", "lifetime value; not asked")],
      context="The agent verifies a caller's identity before changing the e-mail on the account.",
      tool="crm_lookup"),

    V(T, "Analyzing dependencies\nDownloading dependencies\nInstalling Firebase 11.4.0 (was 10.29.0)\n"
         "Installing GoogleUtilities 8.0.2\nGenerating Pods project\nPod installation complete! There are 14 "
         "dependencies from the Podfile and 31 total pods installed.",
      [("11.4.0", "version", "Firebase version now installed"),
       ("10.29.0", "version", "Firebase version before the upgrade", {"current": False})],
      [("8.0.2", "incidental", "a transitive pod nobody asked about"), ("14", "incidental"),
       ("31", "incidental")],
      context="The user asked which Firebase version the iOS app ended up with after the upgrade.", tool="Bash"),

    V(T, 'HTTP/1.1 401 Unauthorized\nWWW-Authenticate: Bearer error="invalid_token", error_description="token '
         'expired at 2026-12-06T06:58:12Z"\nX-Request-Id: 7c1d0e52-93ab-4f1e-8a70-2b5d6c9e4f13\nContent-Length: 0',
      [("401", "code", "status of the call"),
       ("2026-12-06T06:58:12Z", "datetime", "when the token expired"),
       ("7c1d0e52-93ab-4f1e-8a70-2b5d6c9e4f13", "id", "request id to quote to the API's support")],
      [("HTTP/1.1", "label", "protocol name"), ("0", "incidental", "content length")],
      tool="http_request"),

    V(T, "[Stage 3:=========>              (118 + 16) / 200]\n"
         "26/12/06 07:31:44 WARN TaskSetManager: Lost task 41.0 in stage 3.0 (TID 1187) (10.0.7.12 executor 5): "
         "java.lang.OutOfMemoryError: Java heap space",
      [("3", "id", "Spark stage that dies", {"also": ["3.0"]})],
      [("118 + 16", "incidental", "progress bar: tasks done and running"), ("200", "incidental", "tasks in the stage"),
       ("26/12/06 07:31:44", "incidental", "log stamp"), ("41.0", "incidental", "task and attempt"),
       ("1187", "incidental", "task id"), ("10.0.7.12", "incidental", "executor host; any executor would do"),
       ("5", "incidental", "executor number")],
      context="The user asked why the Spark job always dies at stage 3.", tool="Bash",
      notes="`3.0` is Spark's stage.attempt spelling of stage 3. The fact the session turns on is the heap "
            "running out, a step outcome, not a value."),

    V(T, "  feat/ios-17-widgets  4be91d2 [origin/feat/ios-17-widgets: ahead 3, behind 12] Widget timeline uses "
         "15-min refresh\n* main                 a07c3f5 [origin/main] Release 5.2.0 (#611)",
      [("feat/ios-17-widgets", "branch", "the widget branch", {"also": ["origin/feat/ios-17-widgets"]}),
       ("4be91d2", "hash", "head commit of the widget branch"),
       ("3", "count", "commits the widget branch is ahead of its remote"),
       ("12", "count", "commits the widget branch is behind its remote")],
      [("15-min", "incidental", "inside a commit subject"), ("a07c3f5", "incidental", "head of main, not asked"),
       ("5.2.0", "incidental", "inside main's last commit subject"), ("#611", "incidental")],
      context="The user asks whether the widget branch needs a pull before more work.", tool="Bash",
      notes="origin/feat/ios-17-widgets is the remote-tracking name of the same branch."),

    V(T, '{"refund": {"id": "rf_8KqT31", "order": "W-220981", "amount": 64.90, "previous_amount": 129.80, '
         '"currency": "EUR", "status": "succeeded", "updated": "2026-12-06T07:02:55Z"}}',
      [("rf_8KqT31", "id", "the refund"),
       ("W-220981", "id", "order refunded"),
       ("64.90", "amount", "refund amount after the change (EUR)"),
       ("129.80", "amount", "refund amount before the change", {"current": False})],
      [("2026-12-06T07:02:55Z", "incidental", "update stamp")],
      tool="update_refund", context="The agent halved a refund after the customer kept one of two items."),

    V(T, "Could not connect to Redis at cache-prod-03.eu-central-1.internal:6380: Connection refused\nnot connected> ",
      [("cache-prod-03.eu-central-1.internal", "host", "Redis host the agent tried"),
       ("6380", "port", "Redis port tried")],
      [("03", "host_fragment"), ("eu-central-1", "host_fragment", "region inside the host name")],
      tool="Bash"),

    V(T, "REPOSITORY      TAG       IMAGE ID       CREATED        SIZE\n"
         "mlflow-server   2.17.2    3e1a9b0c7d55   2 days ago     1.42GB\n"
         "mlflow-server   2.9.0     b82f11de4a90   7 months ago   2.87GB",
      [("2.17.2", "version", "tag of the new image"),
       ("1.42GB", "size", "size of the new image"),
       ("2.9.0", "version", "tag of the old image"),
       ("2.87GB", "size", "size of the old image")],
      [("3e1a9b0c7d55", "incidental", "image id"), ("b82f11de4a90", "incidental", "image id"),
       ("2 days ago", "incidental"), ("7 months ago", "incidental")],
      context="The user asks whether the MLflow upgrade made the image smaller.", tool="Bash",
      notes="The old image still exists: its tag and size are not superseded, they are the other side of the "
            "comparison."),

    V(T, ">       assert convert(1013.25, 'hPa', 'atm') == pytest.approx(1.0)\n"
         "E       assert 0.9999999 == 1.0 \u00b1 1.0e-06\n\ntests/test_units.py:41: AssertionError\n"
         "========= 1 failed, 4 passed in 0.31s =========",
      [("tests/test_units.py", "path", "file of the failing test"),
       ("0.9999999", "number", "value the conversion returned"),
       ("1.0", "number", "value the test expects"),
       ("1.0e-06", "number", "tolerance pytest applied"),
       ("1", "count", "failed tests"),
       ("4", "count", "passed tests")],
      [("1013.25", "code_literal", "input in the test's code"), ("41", "stack_line"), ("0.31s", "incidental")],
      tool="Bash",
      notes="1.0 is both a literal in the shown code and the expected value pytest prints: labelled once, as the "
            "expected value."),

    V(T, "Ran 212 tests in 18.406s\n\nOK (skipped=3)",
      [],
      [("212", "incidental", "size of the suite"), ("18.406s", "incidental"), ("3", "incidental")],
      context="The user asked the agent to make sure nothing broke; the whole run passed.", tool="Bash",
      notes="No value: the fact is that the run passed, a step outcome."),

    V(T, "sum(refunds_eur) = 48,211.07 over 3,904 rows (2 rows with NULL skipped)",
      [("48,211.07", "amount", "total refunds the user asked for (EUR)"),
       ("3,904", "count", "rows summed"),
       ("2", "count", "rows skipped because refunds_eur is NULL")],
      context="The user asked for the total of the refunds column of the November export.", tool="run_sql"),

    V(T, "Run actions/setup-node@v4\nFound in cache @ /opt/hostedtoolcache/node/18.17.1/x64\n"
         "npm error engine Unsupported engine for vite@6.0.1: wanted: {\"node\":\"^18.18.0 || >=20.0.0\"} "
         "(current: {\"node\":\"18.17.1\",\"npm\":\"9.6.7\"})",
      [("18.17.1", "version", "Node version on the CI runner"),
       ("vite@6.0.1", "id", "package (and version) that refuses that Node"),
       ("^18.18.0 || >=20.0.0", "version", "Node versions vite accepts")],
      [("actions/setup-node@v4", "incidental", "the action itself works; its version is not at issue"),
       ("@", "incidental", "a lone @ in the runner's message"),
       ("/opt/hostedtoolcache/node/18.17.1/x64", "incidental", "cache path; restates the Node version"),
       ("9.6.7", "incidental", "npm version"), ("6.0.1", "part_of_value", "inside vite@6.0.1")],
      context="CI went red after vite was upgraded.", tool="Bash"),

    V(T, "Index Scan using idx_orders_customer_created on orders  (cost=0.43..8.45 rows=1 width=96) (actual "
         "time=0.021..0.023 rows=3 loops=1)\n  Index Cond: (customer_id = 88412)\nPlanning Time: 0.118 ms\n"
         "Execution Time: 0.041 ms",
      [("0.041 ms", "duration", "execution time of the query with the new index")],
      [("0.43..8.45", "incidental", "planner cost"), ("rows=1", "incidental"), ("width=96", "incidental"),
       ("time=0.021..0.023", "incidental"), ("rows=3", "incidental"), ("loops=1", "incidental"),
       ("88412", "incidental", "customer picked at random to test the plan"), ("0.118 ms", "incidental")],
      context="The agent checks whether the new index is used and how fast the query now is (it took 2.3 s "
              "before).", tool="run_sql"),

    V(T, "JobId=5512093 JobName=md_lysozyme_300K\n   JobState=TIMEOUT Reason=TimeLimit ExitCode=0:0\n"
         "   RunTime=2-00:00:11 TimeLimit=2-00:00:00\n   NumNodes=4 NumCPUs=256 Partition=gpu-a100\n"
         "   StdOut=/scratch/kpatel/md/slurm-5512093.out",
      [("5512093", "id", "the Slurm job"),
       ("2-00:00:00", "duration", "time limit the job hit (2 days)"),
       ("/scratch/kpatel/md/slurm-5512093.out", "path", "the job's output file")],
      [("md_lysozyme_300K", "label", "job name"), ("0:0", "incidental"),
       ("2-00:00:11", "incidental", "run time: the limit plus the kill delay"), ("4", "incidental"),
       ("256", "incidental"), ("gpu-a100", "name_with_digits", "partition named after a GPU model")],
      context="The user asks why the molecular dynamics run stopped and how much time it had.", tool="Bash"),

    V(T, "   4127 192.0.2.144\n     88 10.12.0.5\n     12 203.0.113.77",
      [("192.0.2.144", "ip", "client that hammered /login"),
       ("4127", "count", "requests from that client")],
      [("88", "incidental"), ("10.12.0.5", "incidental", "internal health checker"), ("12", "incidental"),
       ("203.0.113.77", "incidental")],
      context="The user asked which client hammered /login between 03:00 and 03:05 (output of sort | uniq -c).",
      tool="Bash"),

    V(T, "panic: runtime error: index out of range [5] with length 5\n\ngoroutine 41 [running]:\n"
         "github.com/tidewater/ingest/internal/parse.splitRecord(...)\n\t/src/internal/parse/record.go:212 +0x1c4\n"
         "main.main()\n\t/src/cmd/ingest/main.go:37 +0x8d\nexit status 2",
      [("/src/internal/parse/record.go", "path", "file where the index goes out of range"),
       ("5", "number", "both the index tried and the length of the slice (an off-by-one)")],
      [("41", "pid_or_address", "goroutine id"), ("212", "stack_line"), ("+0x1c4", "pid_or_address"),
       ("/src/cmd/ingest/main.go", "incidental", "caller frame"), ("37", "stack_line"),
       ("+0x8d", "pid_or_address"), ("2", "incidental", "Go's exit status for a panic")],
      tool="Bash",
      notes="Two facts share one number (index 5, length 5). A text is listed once, so one value names both "
            "referents; a state must keep both facts."),

    V(T, "Ticket #T-77019 (priority: urgent)\nFrom: Oskar Lind <oskar@lindbageri.se>\n\nHi, the card reader "
         "(model PX-400, serial 40A-118-2093) shows error E31 since this morning. We reinstalled app version 2.14 "
         "like the FAQ says. Order 5513 is stuck as unpaid.\n--\nSent from my iPhone",
      [("#T-77019", "id", "support ticket"),
       ("oskar@lindbageri.se", "email", "customer's e-mail"),
       ("40A-118-2093", "id", "serial of the faulty card reader"),
       ("E31", "id", "error code the reader shows"),
       ("2.14", "version", "app version the customer reinstalled"),
       ("5513", "id", "order stuck as unpaid")],
      [("PX-400", "name_with_digits", "model name")],
      tool="get_ticket"),

    V(T, '{"total_count": 2, "items": [{"number": 1044, "title": "Crash on Android 15 when rotating", "html_url": '
         '"https://github.com/tidewater/tally-android/issues/1044", "state": "open"}, {"number": 987, "title": '
         '"Sync loses notes > 32 KB", "html_url": "https://github.com/tidewater/tally-android/issues/987", "state": '
         '"closed"}]}',
      [("1044", "id", "open issue about the rotation crash"),
       ("https://github.com/tidewater/tally-android/issues/1044", "url", "link to that issue")],
      [("2", "incidental"), ("15", "incidental", "inside the issue title"), ("987", "incidental"),
       ("https://github.com/tidewater/tally-android/issues/987", "incidental", "a closed, unrelated issue"),
       ("32 KB", "incidental", "inside an unrelated title")],
      context="The user asked for the open issue about the crash on rotation.", tool="github_search_issues",
      notes="The number and the URL holding it are two values of different kinds."),

    V(T, "    1\u2192apiVersion: apps/v1\n    2\u2192kind: Deployment\n    3\u2192metadata:\n"
         "    4\u2192  name: ledger-worker\n    5\u2192spec:\n    6\u2192  replicas: 2\n    7\u2192  template:\n"
         "    8\u2192    spec:\n    9\u2192      containers:\n   10\u2192        - name: worker\n"
         "   11\u2192          image: registry.tidewater.io/ledger-worker:2026.11.3\n   12\u2192          resources:\n"
         "   13\u2192            limits:\n   14\u2192              memory: 512Mi",
      [("registry.tidewater.io/ledger-worker:2026.11.3", "id", "image the worker runs"),
       ("512Mi", "size", "memory limit of the worker")],
      [("1", "incidental", "line-number prefix"),
       ("2", "incidental", "line-number prefix, and also the replica count, which was not asked"),
       ("3", "incidental", "line-number prefix"), ("4", "incidental", "line-number prefix"),
       ("5", "incidental", "line-number prefix"), ("6", "incidental", "line-number prefix"),
       ("7", "incidental", "line-number prefix"), ("8", "incidental", "line-number prefix"),
       ("9", "incidental", "line-number prefix"), ("10", "incidental", "line-number prefix"),
       ("11", "incidental", "line-number prefix"), ("12", "incidental", "line-number prefix"),
       ("13", "incidental", "line-number prefix"), ("14", "incidental", "line-number prefix"),
       ("apps/v1", "label", "Kubernetes API group and version"),
       ("2026.11.3", "part_of_value", "tag inside the image reference")],
      context="The user asked which image tag the ledger worker runs and how much memory it may use; the agent "
              "reads k8s/worker.yaml.", tool="Read"),

    V(T, "; <<>> DiG 9.18.28 <<>> api.tidewater.io\n;; ANSWER SECTION:\n"
         "api.tidewater.io.\t300\tIN\tCNAME\ttidewater-prod-lb-1180.eu-west-1.elb.amazonaws.com.\n\n"
         ";; Query time: 23 msec\n;; SERVER: 1.1.1.1#53(1.1.1.1)",
      [("api.tidewater.io", "host", "name being resolved"),
       ("tidewater-prod-lb-1180.eu-west-1.elb.amazonaws.com", "host", "load balancer the name now points at"),
       ("300", "duration", "TTL in seconds: how long caches may keep the old answer")],
      [("9.18.28", "incidental", "dig's own version"), ("1180", "host_fragment"),
       ("eu-west-1", "host_fragment"), ("23 msec", "incidental"), ("1.1.1.1#53(1.1.1.1)", "incidental",
                                                                  "resolver used")],
      context="After the DNS change the user asks where api.tidewater.io points and how long old answers may "
              "linger.", tool="Bash"),

    V(T, "--- a/config/limits.py\n+++ b/config/limits.py\n@@ -14,7 +14,7 @@ UPLOAD_LIMITS = {\n"
         "-    \"max_file_mb\": 25,\n+    \"max_file_mb\": 100,\n     \"max_files\": 10,",
      [("config/limits.py", "path", "file changed",
        {"also": ["a/config/limits.py", "b/config/limits.py"]}),
       ("100", "size", "new upload limit per file (MB)"),
       ("25", "size", "old upload limit per file (MB)", {"current": False})],
      [("@@ -14,7 +14,7 @@", "incidental", "hunk header"),
       ("10", "code_literal", "an unchanged setting in the context lines")],
      context="The user asked the agent to raise the upload limit to 100 MB; this is the diff.", tool="Bash"),

    V(T, "[bot] Please enter your order number (e.g. 100-0000000).\n[customer] 114-2290315\n"
         "[bot] Thanks! Order 114-2290315 was delivered on 2 Dec to a parcel locker (code 5521).\n"
         "[customer] i never got the locker code",
      [("114-2290315", "id", "customer's order"),
       ("2 Dec", "date", "delivery date"),
       ("5521", "id", "locker pickup code the customer never received")],
      [("100-0000000", "example", "format shown by the bot")],
      context="A support agent takes over a chat the bot could not resolve.", tool="get_chat_history"),

    V(T, "Performance: 61\nAccessibility: 98\nLargest Contentful Paint: 4.3 s\nTotal Blocking Time: 1,180 ms\n"
         "Cumulative Layout Shift: 0.02",
      [("61", "number", "performance score of the product page"),
       ("4.3 s", "duration", "largest contentful paint"),
       ("1,180 ms", "duration", "total blocking time")],
      [("98", "incidental", "accessibility is fine and not asked"), ("0.02", "incidental", "layout shift is fine")],
      context="The user asked why the product page scores badly on performance.", tool="Bash"),

    V(T, "subject=CN = pay.tidewater.io\nnotAfter=Jan 14 23:59:59 2027 GMT\nsha256 Fingerprint=4F:9A:1C:22:7B:E0:35:"
         "D8:61:AA:0C:93:5E:F2:48:17:B6:3D:C9:70:0E:84:2A:5B:F1:66:D3:19:8C:47:E5:02",
      [("pay.tidewater.io", "host", "host the certificate is for"),
       ("Jan 14 23:59:59 2027 GMT", "datetime", "certificate expiry")],
      [("sha256", "algorithm"),
       ("4F:9A:1C:22:7B:E0:35:D8:61:AA:0C:93:5E:F2:48:17:B6:3D:C9:70:0E:84:2A:5B:F1:66:D3:19:8C:47:E5:02",
        "incidental", "fingerprint; only the expiry was asked")],
      context="The user asked when the payment site's certificate expires.", tool="Bash"),

    V(T, "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\nException Codes: KERN_INVALID_ADDRESS at 0x0000000000000010\n"
         "Thread 0 Crashed:\n0   Tally    0x0000000102a4c3f0 SyncEngine.merge(_:) + 412 (SyncEngine.swift:188)\n"
         "1   Tally    0x0000000102a4b9e8 SyncEngine.run() + 96 (SyncEngine.swift:97)",
      [("SyncEngine.swift", "path", "source file of the crashing frame")],
      [("0x0000000000000010", "pid_or_address"), ("0", "incidental", "thread and frame number"),
       ("0x0000000102a4c3f0", "pid_or_address"), ("412", "pid_or_address", "offset into the function"),
       ("188", "stack_line"), ("1", "incidental", "frame number"), ("0x0000000102a4b9e8", "pid_or_address"),
       ("96", "pid_or_address", "offset into the function"), ("97", "stack_line")],
      context="The user pasted a symbolicated iOS crash report from TestFlight.", tool="Read"),

    V(T, "Successfully installed fastapi-0.115.6 pydantic-2.10.3 starlette-0.41.3 uvicorn-0.32.1\n"
         "WARNING: Running pip as the 'root' user can result in broken permissions.",
      [("fastapi-0.115.6", "version", "FastAPI now installed"),
       ("pydantic-2.10.3", "version", "pydantic that came with it")],
      [("0.115.6", "part_of_value"), ("2.10.3", "part_of_value"),
       ("starlette-0.41.3", "incidental"), ("uvicorn-0.32.1", "incidental")],
      context="The user asked the agent to upgrade FastAPI and to say which pydantic came with it.", tool="Bash"),

    V(T, "i-0a7f3c9e21d4b8865  t3.large  10.40.2.19  running   web-blue-1\n"
         "i-04c1e8d7a2b9f3016  t3.large  10.40.2.27  stopped   web-green-1",
      [("i-04c1e8d7a2b9f3016", "id", "the stopped instance"),
       ("10.40.2.27", "ip", "private address of the stopped instance"),
       ("web-green-1", "id", "name of the stopped instance")],
      [("i-0a7f3c9e21d4b8865", "incidental", "the running instance"), ("t3.large", "incidental"),
       ("10.40.2.19", "incidental"), ("web-blue-1", "incidental")],
      context="The user asked which web instance is down.", tool="Bash"),

    V(T, "Traceback (most recent call last):\n  File \"/home/lena/proj/spectra/fit_peaks.py\", line 143, in <module>\n"
         "    popt, pcov = curve_fit(gauss, x, y, p0=[1.0, 6563.0, 2.0])\n"
         "  File \"/opt/conda/envs/astro/lib/python3.12/site-packages/scipy/optimize/_minpack_py.py\", line 1011, "
         "in curve_fit\n    raise RuntimeError(\"Optimal parameters not found: \" + errmsg)\n"
         "RuntimeError: Optimal parameters not found: Number of calls to function has reached maxfev = 600.",
      [("/home/lena/proj/spectra/fit_peaks.py", "path", "script whose fit fails"),
       ("600", "count", "function-call budget the fit ran out of")],
      [("143", "stack_line"), ("p0", "label", "parameter name"), ("1.0", "code_literal"),
       ("6563.0", "code_literal", "initial guess in the call"), ("2.0", "code_literal"),
       ("/opt/conda/envs/astro/lib/python3.12/site-packages/scipy/optimize/_minpack_py.py", "incidental",
        "library frame"), ("1011", "stack_line")],
      tool="Bash"),

    # --- user turns --------------------------------------------------------------------------------------------
    V(U, "We bill about 2.5k invoices a month through you (2,500 give or take), and since the 1 December update "
         "roughly 85 % of them go out without the PDF attached.",
      [("2.5k", "count", "invoices the customer bills per month", {"also": ["2,500"]}),
       ("1 December", "date", "update after which PDFs went missing"),
       ("85 %", "percentage", "share of invoices sent without the PDF")],
      notes="2.5k and 2,500 are one fact; `85 %` with a space is a percentage like 85%."),

    V(U, "The failing run is https://ci.acme-build.dev/orgs/ledger/pipelines/3318/jobs/77 and job 77 is the "
         "migration step. The artefact we need is under "
         "https://ci.acme-build.dev/artifacts/3318/dump-2026-12-05.tar.zst",
      [("https://ci.acme-build.dev/orgs/ledger/pipelines/3318/jobs/77", "url", "failing CI job"),
       ("77", "id", "the failing job (the migration step)"),
       ("https://ci.acme-build.dev/artifacts/3318/dump-2026-12-05.tar.zst", "url", "artefact the user needs")],
      [("3318", "part_of_value", "pipeline number, only ever inside the URLs"),
       ("dump-2026-12-05.tar.zst", "part_of_value", "file name inside the second URL")],
      notes="77 is said on its own as well as inside the URL: two values. 3318 appears only inside URLs: a "
            "fragment of them."),

    V(U, "Correction on the wire for Kessler GmbH: it's EUR 18,250.00, not 18,520 (I transposed the digits). "
         "Value date stays 2026-12-09, reference KSL-INV-0932.",
      [("EUR 18,250.00", "amount", "amount of the wire to Kessler GmbH"),
       ("18,520", "amount", "mistyped amount given earlier", {"current": False}),
       ("2026-12-09", "date", "value date of the wire"),
       ("KSL-INV-0932", "id", "payment reference")]),

    V(U, "The geocoding partner lets each API key make 7 requests in parallel, and we run exactly 7 workers, so "
         "give every worker its own single slot and don't start any more of them.",
      [("7", "count", "both the partner's parallel-request limit per key and the number of workers")],
      notes="Two facts share one number. A text is listed once, so one value names both referents; a state must "
            "keep both facts (the limit and the worker count), not one 7."),

    V(U, "Rerun the simulation with dt = 0.005, 2e6 steps and seed 1729. The last run used seed 42 and dt 0.01; "
         "keep those in the log so we can compare.",
      [("0.005", "number", "time step for the rerun"),
       ("2e6", "count", "steps for the rerun"),
       ("1729", "number", "random seed for the rerun"),
       ("42", "number", "seed of the previous run", {"current": False}),
       ("0.01", "number", "time step of the previous run", {"current": False})],
      notes="The previous run's settings are superseded for the rerun but kept as former values for the "
            "comparison."),

    V(U, "Please loop in @marta.ops on the thread and send the credit note to billing@kiln-and-co.com, not to the "
         "old finance@kiln-and-co.com address: they closed that inbox on 30 Nov.",
      [("@marta.ops", "id", "colleague's chat handle to add to the thread"),
       ("billing@kiln-and-co.com", "email", "where the credit note goes"),
       ("finance@kiln-and-co.com", "email", "old address, no longer to be used", {"current": False}),
       ("30 Nov", "date", "when the old inbox was closed")]),

    V(U, "Our fiscal year closes on 31.03.2027 (that's 31 March, for the UK office) and the auditors arrive the "
         "week of 12 April.",
      [("31.03.2027", "date", "fiscal year end", {"also": ["31 March"]}),
       ("12 April", "date", "week the auditors arrive")]),

    V(U, "Phone numbers in the signup form should look like +49 30 901820: country code, area code, number. Right "
         "now it rejects the customer's real one, 0049-89-2190-4471.",
      [("0049-89-2190-4471", "phone", "customer's number that the form rejects")],
      [("+49 30 901820", "example", "illustrates the format only")]),

    V(U, "TestFlight shows 4.6.0 (build 812) but the App Store page still says version 4.5.3. We submitted 4.6 on "
         "Tuesday and review usually takes 24-48 hours.",
      [("4.6.0", "version", "version submitted for review", {"also": ["4.6"]}),
       ("812", "id", "build number of the submitted version"),
       ("4.5.3", "version", "version live on the App Store"),
       ("24-48 hours", "duration", "usual review time")]),

    V(U, "New delivery address for the spare parts: Unit 4B, 221 Harbour Road, Leith, Edinburgh EH6 7DQ. The site "
         "manager is on 0131 496 0822 between 7 and 3.",
      [("Unit 4B, 221 Harbour Road, Leith, Edinburgh EH6 7DQ", "address", "delivery address for the spare parts"),
       ("0131 496 0822", "phone", "site manager's phone"),
       ("7", "time", "earliest time to call (07:00)"),
       ("3", "time", "latest time to call (15:00)")],
      [("4B", "part_of_value"), ("221", "part_of_value"), ("EH6", "part_of_value"), ("7DQ", "part_of_value"),
       ("0131", "part_of_value"), ("496", "part_of_value"), ("0822", "part_of_value")],
      notes="`between 7 and 3` is a working-hours window: two times written as bare digits."),

    V(U, "If we draw the full \u00a3250k facility at 6.4% over 5 years, is the monthly repayment really \u00a34,882? "
         "The bank's sheet says 4.88k, but their worked example uses 200,000.",
      [("\u00a3250k", "amount", "size of the loan facility"),
       ("6.4%", "percentage", "interest rate"),
       ("5 years", "duration", "loan term"),
       ("\u00a34,882", "amount", "monthly repayment the bank quotes", {"also": ["4.88k"]})],
      [("200,000", "example", "principal of the bank's worked example, not this loan")]),

    V(U, "Webhook signing secret is whsec_3kD9pQ2rT8vX1mZ7. The endpoint we_1Q8zLp2eZvKb is the one failing with "
         "400s since 06:10.",
      [("we_1Q8zLp2eZvKb", "id", "failing webhook endpoint"),
       ("400", "code", "status the endpoint answers with", {"also": ["400s"]}),
       ("06:10", "time", "when the failures started")],
      [("whsec_3kD9pQ2rT8vX1mZ7", "secret", "pasted signing secret")]),

    V(U, "Bump the RDS storage alarm to fire at 85 % instead of 90%, and send it to #infra-alerts as well as "
         "oncall@lumen-freight.io.",
      [("85 %", "percentage", "new alarm threshold"),
       ("90%", "percentage", "old alarm threshold", {"current": False}),
       ("oncall@lumen-freight.io", "email", "address the alarm also goes to")]),

    V(U, "Can you check why the 6 pm batch (the 18:00 one in the scheduler) skipped Friday 4 December? The one at "
         "06:00 ran fine.",
      [("6 pm", "time", "batch that skipped", {"also": ["18:00"]}),
       ("Friday 4 December", "date", "day it skipped"),
       ("06:00", "time", "morning batch, which ran")]),

    V(U, "We pinned `numpy<2` last spring. Drop that pin now, 2.1.3 works with our Cython extensions, and keep "
         "python_requires at >=3.10.",
      [("numpy<2", "version", "old numpy pin, to be dropped", {"current": False}),
       ("2.1.3", "version", "numpy version known to work"),
       (">=3.10", "version", "Python versions the package supports")],
      [("python_requires", "label")]),

    V(U, "My Pixel 8 on Android 14 can't scan the QR code at checkout; my wife's iPhone 12 scans it fine.",
      [("Pixel 8", "id", "customer's phone, which fails", {"ambiguous": True}),
       ("14", "version", "Android version of the failing phone"),
       ("iPhone 12", "id", "phone that works", {"ambiguous": True})],
      notes="Device models name hardware: facts about the environment, but product names; marked ambiguous."),

    V(U, "Please reschedule the technician visit for job WO-66120: not Monday 7 Dec at 8:00, but Wednesday 9 Dec, "
         "13:00\u201315:00. The gate code is 4471#.",
      [("WO-66120", "id", "work order"),
       ("7 Dec", "date", "old visit day", {"current": False}),
       ("8:00", "time", "old visit time", {"current": False}),
       ("9 Dec", "date", "new visit day"),
       ("13:00", "time", "start of the new visit window"),
       ("15:00", "time", "end of the new visit window"),
       ("4471#", "id", "gate code the technician needs", {"ambiguous": True})],
      notes="The gate code is both a fact the visit needs and an access code close to a secret; marked "
            "ambiguous."),

    V(U, "The assay plate has 96 wells; A1\u2013A12 are blanks, and the standard curve tops out at 2.0 mg/mL, so the "
         "2.7 reading in C4 is out of range.",
      [("96", "count", "wells on the plate"),
       ("A1\u2013A12", "id", "blank wells"),
       ("2.0 mg/mL", "number", "top of the standard curve"),
       ("2.7", "number", "reading of well C4"),
       ("C4", "id", "well with the out-of-range reading")]),

    V(U, "About a quarter of our drivers, 212 of 850, still run app 5.1.x, which can't read the new route format.",
      [("212", "count", "drivers on the old app"),
       ("850", "count", "drivers in all"),
       ("5.1.x", "version", "old app series that cannot read the new format")]),

    V(U, "Open 443 and 8443 from 10.8.0.0/16 only; 22 stays closed except from the VPN box 10.8.0.4.",
      [("443", "port", "port to open"),
       ("8443", "port", "second port to open"),
       ("10.8.0.0/16", "ip", "only range allowed on those ports"),
       ("22", "port", "SSH port that stays closed"),
       ("10.8.0.4", "ip", "VPN box allowed on port 22")]),

    V(U, "The statement shows -1,420.00 on 03/12 but the supplier says they sent +1,420.00, so it's a reversal, "
         "not a payment. Our ref is PMT-2026-4418.",
      [("-1,420.00", "amount", "debit on our statement"),
       ("+1,420.00", "amount", "what the supplier says they sent"),
       ("03/12", "date", "date of the statement line (3 December)"),
       ("PMT-2026-4418", "id", "our payment reference")],
      notes="The sign changes the fact: -1,420.00 and +1,420.00 are two values, not restatements."),

    V(U, "The build fails with minSdk 21. Play now requires targetSdk 35, and I'd like minSdk 24. Keystore "
         "password is kst-Pw!9912, alias release-2026.",
      [("21", "number", "minSdk the project has now", {"current": False}),
       ("35", "number", "targetSdk Play requires"),
       ("24", "number", "minSdk the user wants"),
       ("release-2026", "id", "signing key alias")],
      [("kst-Pw!9912", "secret", "pasted keystore password")]),

    V(U, "Samples S-0412 to S-0431 were run at 37 \u00b0C for 18 h; S-0420 was dropped, so n = 19.",
      [("S-0412", "id", "first sample of the batch"),
       ("S-0431", "id", "last sample of the batch"),
       ("37 \u00b0C", "number", "incubation temperature"),
       ("18 h", "duration", "incubation time"),
       ("S-0420", "id", "dropped sample"),
       ("19", "count", "samples analysed")]),

    V(U, "Users on the EU cluster get a 502 after exactly 60 seconds. Is that the ALB idle timeout? Our gunicorn "
         "timeout is 120.",
      [("502", "code", "error users get"),
       ("60 seconds", "duration", "when the 502 comes"),
       ("120", "duration", "gunicorn timeout (seconds)")]),

    V(U, "Should we use OAuth2 with PKCE in the iOS app, or is the older 2FA-by-SMS flow enough? All I know is "
         "that sha256 is needed for the challenge.",
      [],
      [("OAuth2", "name_with_digits"), ("2FA", "name_with_digits"), ("sha256", "algorithm")],
      notes="No value: every token with a digit is a name."),

    V(U, "Customer 3390-KL says her March and April invoices, INV-0301 and INV-0417, were both charged the old 19% "
         "VAT. Since 1 April it's 16%, so she's owed the difference on INV-0417 only.",
      [("3390-KL", "id", "customer"),
       ("INV-0301", "id", "March invoice (correctly charged)"),
       ("INV-0417", "id", "April invoice, overcharged"),
       ("19%", "percentage", "old VAT rate", {"current": False}),
       ("1 April", "date", "when the new rate took effect"),
       ("16%", "percentage", "VAT rate since 1 April")]),

    V(U, "Use the 1:50,000 sheet, not the 1:25k one; the survey area spans grid squares NT27 to NT49.",
      [("1:50,000", "number", "map scale to use"),
       ("1:25k", "number", "map scale not to use"),
       ("NT27", "id", "first grid square of the survey area"),
       ("NT49", "id", "last grid square of the survey area")],
      notes="The rejected scale is a value (what not to use), like a port that is taken."),

    # --- assistant turns ---------------------------------------------------------------------------------------
    V(A, "The nightly export now takes 1.5 minutes instead of 14 minutes, because I replaced the per-row INSERTs "
         "with one COPY; most of the 90 seconds is the upload to gs://acme-dw-staging/exports/.",
      [("1.5 minutes", "duration", "time of the nightly export now", {"also": ["90 seconds"]}),
       ("14 minutes", "duration", "time of the export before the change", {"current": False}),
       ("gs://acme-dw-staging/exports/", "url", "where the export is uploaded")]),

    V(A, "I called https://api.fieldnote.app/v2/notes?owner=u_4471&since=2026-11-30T00:00:00Z&limit=200 and got a "
         "400: the API caps a page at 100 notes, so I'll page through with limit=100.",
      [("https://api.fieldnote.app/v2/notes?owner=u_4471&since=2026-11-30T00:00:00Z&limit=200", "url",
        "call that was refused"),
       ("400", "code", "status of that call"),
       ("100", "count", "largest page the API accepts")],
      [("v2", "part_of_value"), ("u_4471", "part_of_value"), ("2026-11-30T00:00:00Z", "part_of_value"),
       ("200", "part_of_value", "the page size that was too large, only inside the URL")]),

    V(A, "Moved the stand-up reminder from 09:00 to 09:45 Europe/Lisbon; the cron line is now `45 9 * * 1-5`.",
      [("09:00", "time", "old reminder time", {"current": False}),
       ("09:45", "time", "new reminder time", {"also": ["45 9 * * 1-5"]}),
       ("Europe/Lisbon", "id", "time zone of the reminder")],
      notes="The cron line restates 09:45 on weekdays."),

    V(A, "The crash only hits Android 14 (API 34) devices running 3.8.1 (versionCode 30801); 212 of the 1,930 "
         "crash reports come from one Pixel 7a.",
      [("14", "version", "Android version affected", {"also": ["34"]}),
       ("3.8.1", "version", "app version affected", {"also": ["30801"]}),
       ("212", "count", "crash reports from a single device"),
       ("1,930", "count", "crash reports in all"),
       ("Pixel 7a", "id", "the one device most reports come from", {"ambiguous": True})],
      notes="API level 34 is Android 14 and versionCode 30801 is 3.8.1: other spellings of the same facts. The "
            "device model is a fact of the debugging but a product name: marked ambiguous."),

    V(A, "I set the health-check timeout to 30s and the retry budget to 30, as in the old Helm chart; the probe "
         "period stays 10s.",
      [("30s", "duration", "health-check timeout"),
       ("30", "count", "retry budget"),
       ("10s", "duration", "probe period")],
      notes="Same digits, two facts of different kinds; `30` is not a restatement of `30s`."),

    V(A, "Checked the download with sha512sum: it matches release-4.2.0.tar.gz.sha512. The MD5 on the vendor's page "
         "(d41d8cd98f00b204e9800998ecf8427e) is the digest of an empty file, so that line is wrong, not our "
         "download.",
      [("release-4.2.0.tar.gz.sha512", "path", "checksum file the download matches"),
       ("d41d8cd98f00b204e9800998ecf8427e", "hash", "wrong digest published on the vendor's page")],
      [("sha512sum", "command"), ("MD5", "algorithm"), ("4.2.0", "part_of_value")]),

    V(A, "Churn for the Pro tier was 3.2% in November (41 of 1,282 accounts), up from 2.6% in October: roughly "
         "1 in 31 Pro accounts left.",
      [("3.2%", "percentage", "November churn of the Pro tier", {"also": ["1 in 31"]}),
       ("41", "count", "Pro accounts that left in November"),
       ("1,282", "count", "Pro accounts at the start of November"),
       ("2.6%", "percentage", "October churn of the Pro tier")],
      notes="October's rate is a separate fact, not a superseded one."),

    V(A, "The worker (pid 48817) is stuck in a futex wait at 0x7f3a2c1e4b90; I sent SIGQUIT to get a thread dump "
         "into /var/log/ingest/threads-2026-12-06.txt.",
      [("/var/log/ingest/threads-2026-12-06.txt", "path", "where the thread dump goes")],
      [("48817", "pid_or_address"), ("0x7f3a2c1e4b90", "pid_or_address")]),

    V(A, "I put the broker URL amqp://ingest:Qx7v-2mPz@mq-01.lab.internal:5671/telemetry into the worker's env; "
         "the password part should move to Vault before Friday.",
      [("amqp://ingest:Qx7v-2mPz@mq-01.lab.internal:5671/telemetry", "url",
        "broker URL (holds a password: to be kept only with it masked)")],
      [("Qx7v-2mPz", "secret", "password inside the URL"), ("mq-01.lab.internal", "part_of_value"),
       ("01", "host_fragment"), ("5671", "part_of_value")]),

    V(A, "Grafana is on port 3000 of the bastion: run ssh -L 3000:grafana.monitoring:3000 ops@bastion-2.acme.net, "
         "then open http://localhost:3000/d/k8s-nodes.",
      [("3000", "port", "Grafana's port, forwarded to the same local port"),
       ("ops@bastion-2.acme.net", "host", "ssh login on the bastion"),
       ("http://localhost:3000/d/k8s-nodes", "url", "dashboard to open")],
      [("3000:grafana.monitoring:3000", "command", "the -L argument of the command"), ("2", "host_fragment")]),

    V(A, "The maintenance window is 2026-12-12 01:00\u201303:00 UTC, which is 20:00\u201322:00 on the 11th in New "
         "York; I've put it in change ticket CHG-30412.",
      [("2026-12-12 01:00", "datetime", "start of the maintenance window", {"also": ["20:00", "11th"]}),
       ("03:00", "time", "end of the maintenance window", {"also": ["22:00"]}),
       ("CHG-30412", "id", "change ticket")],
      notes="The New York times and the 11th are the same window in another time zone."),

    V(A, "I changed the card corner radius from 8dp to 12dp in res/values/dimens.xml, as the design asks; the tap "
         "target is now 48dp tall.",
      [("8dp", "size", "old corner radius", {"current": False}),
       ("12dp", "size", "new corner radius"),
       ("res/values/dimens.xml", "path", "file edited"),
       ("48dp", "size", "height of the tap target")]),

    V(A, "I'll use python3 with hashlib's sha256 and the boto3 client. S3 uploads over HTTP/2 aren't supported, so "
         "it falls back to HTTP/1.1.",
      [],
      [("python3", "command"), ("sha256", "algorithm"), ("boto3", "name_with_digits"), ("S3", "name_with_digits"),
       ("HTTP/2", "label"), ("HTTP/1.1", "label")],
      notes="No value: every token with a digit is a command, an algorithm or a name."),

    V(A, "Found 3 duplicate payouts: three rows in payouts_2026_11 share batch id PB-5540, 12,600.00 ZAR in total.",
      [("3", "count", "duplicate payouts"),
       ("payouts_2026_11", "id", "table holding the duplicates"),
       ("PB-5540", "id", "batch id the duplicates share"),
       ("12,600.00 ZAR", "amount", "total of the duplicate payouts")],
      notes="A table name with digits is needed as written to fix the rows."),

    V(A, "Sprint 48 ends Friday 2026-12-11 (ISO week 50); I'll cut release 7.3.0, tag v7.3.0, that afternoon.",
      [("48", "id", "current sprint"),
       ("2026-12-11", "date", "end of the sprint and day of the release", {"also": ["ISO week 50"]}),
       ("7.3.0", "version", "release to cut", {"also": ["v7.3.0"]})],
      notes="ISO week 50 names the week of the same date: a coarser spelling of it."),

    V(A, "In `retry(max_attempts=5, backoff=1.5)` the 1.5 is a multiplier, not seconds: waits start at 200 ms and "
         "grow by 1.5x, so the 4 waits add up to about 1.6 s.",
      [("5", "count", "maximum attempts"),
       ("1.5", "number", "backoff multiplier", {"also": ["1.5x"]}),
       ("200 ms", "duration", "first wait"),
       ("4", "count", "waits between the attempts"),
       ("1.6 s", "duration", "total waiting time of the retry loop")],
      [("max_attempts", "label")]),

    V(A, "I switched the SMTP relay from smtp-old.mailhub.net:25 to smtp.mailhub.net:587 with STARTTLS; bounces "
         "still go to bounces+ops@tidewater.io.",
      [("smtp-old.mailhub.net:25", "host", "old SMTP relay", {"current": False}),
       ("smtp.mailhub.net:587", "host", "new SMTP relay"),
       ("bounces+ops@tidewater.io", "email", "bounce address")],
      [("25", "part_of_value"), ("587", "part_of_value")]),
    V(A, "I rotated the API key for tenant t-8812. The old key (ending f3Q9) stops working at 2026-12-08 00:00 UTC, "
         "48 hours from now.",
      [("t-8812", "id", "tenant whose key was rotated"),
       ("f3Q9", "id", "last characters of the old key, to tell it apart", {"current": False, "ambiguous": True}),
       ("2026-12-08 00:00 UTC", "datetime", "when the old key stops working", {"also": ["48 hours"]})],
      notes="The four last characters identify the old key without revealing it; close to a secret, so marked "
            "ambiguous. `48 hours from now` restates the cut-off."),

    V(A, "Your order #A-55102 ships in two parcels: the blender left today with tracking 1Z4E82W70391265518, and "
         "the glasses follow on 10 December with a tracking number you'll get by e-mail.",
      [("#A-55102", "id", "customer's order"),
       ("1Z4E82W70391265518", "id", "tracking number of the first parcel"),
       ("10 December", "date", "when the second parcel ships")]),
]
