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

    V(T, "   4127 185.220.101.34\n     88 10.12.0.5\n     12 203.0.113.77",
      [("185.220.101.34", "ip", "client that hammered /login"),
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
      [("143", "stack_line"), ("p0", "label", "parameter name"), ("1.0", "code_literal"), ("6563.0", "code_literal", "initial guess in the call"),
       ("2.0", "code_literal"),
       ("/opt/conda/envs/astro/lib/python3.12/site-packages/scipy/optimize/_minpack_py.py", "incidental",
        "library frame"), ("1011", "stack_line")],
      tool="Bash"),
]
