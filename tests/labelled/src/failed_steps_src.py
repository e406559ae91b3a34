"""Step outcomes: hand-written tool calls and their results, labelled succeeded, failed or denied. Invented text;
harness messages are written in the shape the reference (session-formats.md) gives, in our own words where the
exact wording is not the point.

S(tool, arguments, result, is_error, outcome, reason, reason_class, notes=..., ambiguous=...)
  is_error: what the log marks (True / False), or None where the format carries no such mark
"""


def S(tool, arguments, result, is_error, outcome, reason, reason_class, notes=None, ambiguous=False):
    return {"tool": tool, "arguments": arguments, "result": result, "is_error": is_error, "outcome": outcome,
            "reason": reason, "reason_class": reason_class, "notes": notes, "ambiguous": ambiguous}


B = "Bash"

ITEMS = [
    # --- succeeded, often with failure words in them -------------------------------------------------------------
    S(B, {"command": "npm test"}, "Tests:       0 failed, 48 passed, 48 total\nSnapshots:   0 total\nTime:        6.2 s",
      False, "succeeded", "every test passed ('0 failed')", "ok_with_failure_words"),
    S(B, {"command": "grep -rn \"error handling\" src/"},
      "src/api/client.ts:41:  // error handling added for 429 responses\n"
      "src/api/client.ts:88:    throw new ApiError(res.status, body)", False, "succeeded",
      "grep found the lines it was asked for", "ok_with_failure_words"),
    S("WebFetch", {"url": "https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/403"},
      "403 Forbidden. This status means the server understood the request but will not authorise it. Unlike 401, "
      "sending credentials again will not help.", False, "succeeded",
      "the page about status 403 was fetched", "ok_with_failure_words",
      notes="403 in the URL and the text is the page's subject, not the fetch's outcome."),
    S("Edit", {"file_path": "src/errors.py", "old_string": "except Exception:", "new_string": "except TimeoutError:"},
      "The file src/errors.py has been updated. Error handling added for the timeout branch.", False, "succeeded",
      "edit applied", "ok_with_failure_words"),
    S(B, {"command": "ruff check ."}, "All checks passed!", False, "succeeded", "linter clean", "ok"),
    S(B, {"command": "mypy src"}, "Success: no issues found in 41 source files", False, "succeeded",
      "type check clean", "ok"),
    S(B, {"command": "cargo build --release"},
      "warning: unused variable: `e`\n  --> src/main.rs:88:13\n   |\n88 |     Err(e) => {}\n   |         ^ help: "
      "if this is intentional, prefix it with an underscore: `_e`\n\n    Finished release [optimized] target(s) in "
      "1m 12s", False, "succeeded", "build finished; only a warning", "ok_with_warnings"),
    S(B, {"command": "python -m pytest tests/test_parser.py"},
      "collected 12 items\n\ntests/test_parser.py ............                    [100%]\n\n"
      "============================== 12 passed in 0.84s ==============================", False, "succeeded",
      "all 12 tests passed", "ok"),
    S("Read", {"file_path": "logs/app.log"},
      "2025-03-14 09:12:01 INFO  worker started\n2025-03-14 09:12:03 ERROR job 77120 failed: deadline exceeded\n"
      "Traceback (most recent call last):\n  File \"/srv/worker/run.py\", line 40, in run\nTimeoutError", False,
      "succeeded", "the log file was read; the errors are its content", "ok_with_failure_words",
      notes="Reading a log full of errors is a successful read."),
    S(B, {"command": "grep -c FAILED ci.log"}, "0\nExit code 1", True, "succeeded",
      "grep exits 1 when nothing matches: the answer is 'no FAILED lines'", "ok_with_failure_words",
      ambiguous=True,
      notes="The harness marks it an error; what the agent wanted to learn it learned. Ambiguous by design."),
    S(B, {"command": "git push origin fix/tz-offsets"},
      "Enumerating objects: 9, done.\nWriting objects: 100% (5/5), 612 bytes | 612.00 KiB/s, done.\n"
      "To github.com:acme/ledger.git\n * [new branch]      fix/tz-offsets -> fix/tz-offsets", False, "succeeded",
      "branch pushed", "ok"),
    S("http_request", {"method": "GET", "url": "https://api.acme.io/v2/orders/58213"},
      '{"status": "ok", "errors": [], "order": {"id": 58213, "state": "refunded"}}', False, "succeeded",
      "order fetched ('errors' is empty)", "ok_with_failure_words"),
    S(B, {"command": "curl -s -o /dev/null -w '%{http_code}' https://status.acme.io/health"}, "200", False,
      "succeeded", "health endpoint answered 200", "ok"),
    S(B, {"command": "docker compose up -d"}, " Container acme-db-1  Started\n Container acme-api-1  Started", False,
      "succeeded", "containers started", "ok"),
    S("issue_refund", {"order_id": "ORD-58213", "amount": "500.00", "currency": "USD"},
      '{"refund_id": "re_9KQ2", "status": "succeeded", "amount": 50000, "currency": "usd"}', False, "succeeded",
      "refund of 500.00 went through", "ok"),
    S(B, {"command": "pytest -q"}, "33 passed, 2 xfailed in 4.10s", False, "succeeded",
      "expected failures (xfail) are not failures", "ok_with_failure_words"),
    S(B, {"command": "npm audit"}, "found 0 vulnerabilities", False, "succeeded", "audit clean", "ok"),
    S(B, {"command": "make lint"}, "eslint . --max-warnings 0\n\n\u2714 No problems found (0 errors, 0 warnings)",
      False, "succeeded", "lint clean ('0 errors')", "ok_with_failure_words"),
    S("Write", {"file_path": "docs/errors.md", "content": "# Error codes\n..."},
      "File created successfully at: docs/errors.md", False, "succeeded", "file written", "ok"),
    S(B, {"command": "kubectl rollout status deploy/api"}, 'deployment "api" successfully rolled out', False,
      "succeeded", "rollout complete", "ok"),
    S(B, {"command": "git log --oneline -3"},
      "a1b2c3d Fix failing test for refunds\n9e8f7a6 Revert \"Add retry on 500 errors\"\n"
      "77c01de Handle permission denied from the S3 client", False, "succeeded",
      "log printed; the failure words are commit subjects", "ok_with_failure_words"),
    S("search_tickets", {"query": "permission denied"},
      "3 tickets found:\n#8812 Permission denied when exporting invoices (open)\n#8790 Export denied for "
      "read-only users (closed)\n#8654 403 on the reports page (closed)", False, "succeeded",
      "search returned results", "ok_with_failure_words"),
    S(B, {"command": "python manage.py migrate"},
      "Operations to perform:\n  Apply all migrations: billing, auth\nRunning migrations:\n  Applying "
      "billing.0042_add_invoice_index... OK", False, "succeeded", "migration applied", "ok"),
    S(B, {"command": "terraform apply -auto-approve"},
      "aws_db_instance.main: Modifying... [id=prod-ledger-db]\naws_db_instance.main: Modifications complete after "
      "6m12s\n\nApply complete! Resources: 0 added, 1 changed, 0 destroyed.", False, "succeeded",
      "apply complete", "ok"),
    S(B, {"command": "node scripts/check.js"},
      "(node:48213) [DEP0005] DeprecationWarning: Buffer() is deprecated due to security and usability issues.\n"
      "checked 214 files, all good", False, "succeeded", "script finished; a deprecation warning only",
      "ok_with_warnings"),
    S("WebFetch", {"url": "https://github.com/acme/ledger/issues/403"},
      "Issue #403: Export fails with HTTP 500 on ranges over 90 days (open, 4 comments)", False, "succeeded",
      "the issue page was fetched", "ok_with_failure_words",
      notes="403 is the issue's number and HTTP 500 its subject."),
    S(B, {"command": "git status"}, "On branch main\nnothing to commit, working tree clean", False, "succeeded",
      "status printed", "ok"),
    S(B, {"command": "pip install -r requirements.txt"},
      "Successfully installed pydantic-2.6.4 pydantic-core-2.16.3\nERROR: pip's dependency resolver does not "
      "currently take into account all the packages that are installed. This behaviour is the source of the "
      "following dependency conflicts.\nfastapi 0.95.2 requires pydantic<2.0,>=1.6.2, but you have pydantic 2.6.4 "
      "which is incompatible.", False, "succeeded",
      "the packages were installed (exit 0); pip warns of a conflict", "ok_with_failure_words", ambiguous=True,
      notes="The install happened but left the environment broken for fastapi: succeeded as a step, with a "
            "problem a careful reader would carry forward."),
    S("run_sql", {"query": "SELECT count(*) FROM failed_jobs"}, " count\n-------\n     0\n(1 row)", False,
      "succeeded", "query answered (no failed jobs)", "ok_with_failure_words"),
    S(B, {"command": "./gradlew test"}, "BUILD SUCCESSFUL in 41s\n7 actionable tasks: 7 executed", False,
      "succeeded", "build and tests passed", "ok"),
    S("Task", {"description": "find swallowed exceptions"},
      "Found 2 places where errors are swallowed: src/sync.py:14 (bare except) and src/export.py:90 "
      "(except Exception: pass).", False, "succeeded", "the sub-agent finished its search", "ok_with_failure_words"),
    S(B, {"command": "go test ./..."},
      "ok  \tgithub.com/acme/ledger/internal/tax\t0.412s\nok  \tgithub.com/acme/ledger/internal/api\t1.030s\n"
      "?   \tgithub.com/acme/ledger/cmd/ledger\t[no test files]", False, "succeeded", "every package passed", "ok"),
    S(B, {"command": "systemctl status nginx"},
      "\u25cf nginx.service - A high performance web server\n   Active: active (running) since Fri 2025-03-14 "
      "08:02:11 UTC; 1h 10min ago", False, "succeeded", "service is running", "ok"),
    S(B, {"command": "git revert --no-edit 9e8f7a6"},
      "[main 4d5e6f7] Revert \"Handle 403 from upstream\"\n 1 file changed, 3 deletions(-)", False, "succeeded",
      "revert committed", "ok_with_failure_words"),
    S("send_email", {"to": "l.okafor@example.net", "subject": "Your refund"},
      '{"id": "msg_8812", "status": "queued"}', False, "succeeded", "the mail service accepted the message",
      "ok", notes="Queued for delivery counts as the step done; delivery is another matter."),
    S(B, {"command": "npm ci"}, "added 1203 packages, and audited 1204 packages in 31s\n\nfound 0 vulnerabilities",
      False, "succeeded", "install complete", "ok"),
    S("Read", {"file_path": "docs/permissions.md"},
      "# Permissions\nRequests without a token are denied with 403 Forbidden. Tokens with the read scope are not "
      "allowed to call POST endpoints.", False, "succeeded", "the file was read", "ok_with_failure_words"),
    S(B, {"command": "grep -rn \"not allowed\" src/"},
      "src/policy.py:22:        raise PolicyError(\"refund not allowed after 30 days\")", False, "succeeded",
      "grep found a line", "ok_with_failure_words"),
    S("lookup_refund", {"refund_id": "re_1Ab"},
      '{"refund_id": "re_1Ab", "status": "denied", "reason": "outside the 30-day window", "created": "2025-02-02"}',
      False, "succeeded", "the lookup worked; it reports an earlier refund that was denied",
      "ok_with_failure_words", notes="The record's 'denied' is a fact about an old refund, not this step's outcome."),
    S(B, {"command": "journalctl -u api --since '10 min ago'"},
      "Mar 14 09:12:03 web-2 api[811]: ERROR upstream timed out (30000ms)\nMar 14 09:12:09 web-2 api[811]: WARN "
      "retrying", False, "succeeded", "log lines printed", "ok_with_failure_words"),
    S(B, {"command": "git log --grep=segfault --oneline"}, "b7e1c20 fix: Segmentation fault in renderer on empty "
      "scenes", False, "succeeded", "log printed", "ok_with_failure_words"),
    S(B, {"command": "python -c \"import sys; print(sys.version)\""}, "3.12.2 (main, Feb  6 2024, 20:19:44) [Clang "
      "15.0.0]", False, "succeeded", "printed the version", "ok"),
    S(B, {"command": "docker build -t acme/worker ."}, "Step 12/12 : CMD [\"python\", \"-m\", \"worker\"]\n ---> "
      "Running in 6b1f0e2d9c3a\nRemoving intermediate container 6b1f0e2d9c3a\n ---> 4f7c2a91be03\nSuccessfully "
      "built 4f7c2a91be03\nSuccessfully tagged acme/worker:latest", False, "succeeded", "image built", "ok"),
    S("lookup_order", {"order": "112-4839201-5527301"}, '{"found": false}', False, "succeeded",
      "the lookup answered: no such order", "ok_empty_answer", ambiguous=True,
      notes="The tool worked; the agent's aim (find the order) was not met. Either label can be argued."),
    S(B, {"command": "./scripts/wait_for_db.sh"}, "waiting for db... (attempt 1/10)\nwaiting for db... (attempt "
      "2/10)\ndb is up", False, "succeeded", "the database came up on the second attempt", "ok_with_failure_words"),

    # --- failed -------------------------------------------------------------------------------------------------
    S(B, {"command": "npm install @acme/ui-kit@^4.2.0"},
      "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/@acme%2fui-kit - Not found\n"
      "npm ERR! 404  '@acme/ui-kit@^4.2.0' is not in this registry.", True, "failed",
      "package version not on the registry", "not_found"),
    S("http_request", {"method": "POST", "url": "https://api.acme.io/v2/invoices"},
      "HTTP 500 Internal Server Error\n{\"detail\": \"upstream timeout after 30000ms\"}", None, "failed",
      "server error", "http_error"),
    S(B, {"command": "./bin/render scenes/harbour_v2.blend"}, "Segmentation fault (core dumped)", None, "failed",
      "the program crashed", "crash"),
    S("update_subscription", {"customer": "cus_Q8rT2mVx91", "plan_id": "basic-2025"},
      '{"status": "error", "message": "plan_id not found"}', False, "failed",
      "the service answered with an error status", "api_error_body",
      notes="The log does not mark it; only the body says so."),
    S(B, {"command": "pytest"}, "FAILED tests/test_tax.py::test_vat_rounding - AssertionError\n"
      "==== 2 failed, 30 passed, 1 skipped in 12.84s ====", True, "failed", "two tests failed", "test_failures"),
    S(B, {"command": "make build"}, "gcc -O2 -c src/render.c\nsrc/render.c:41:5: error: implicit declaration of "
      "function 'clamp'\nmake: *** [Makefile:14: build] Error 2", True, "failed", "compile error", "nonzero_exit"),
    S(B, {"command": "python scripts/reconcile.py"},
      "Traceback (most recent call last):\n  File \"scripts/reconcile.py\", line 61, in main\nValueError: ledger "
      "mismatch: expected 18230.55, got 18203.55", True, "failed", "unhandled exception", "traceback"),
    S(B, {"command": "ls /root/.ssh"}, "ls: cannot open directory '/root/.ssh': Permission denied", True, "failed",
      "the operating system refused access to the folder", "os_permission",
      notes="An operating-system permission error is a failure of the step, not a refusal by the user or harness."),
    S(B, {"command": "curl https://internal.acme.io/metrics"},
      "curl: (28) Operation timed out after 30001 milliseconds with 0 bytes received", True, "failed",
      "request timed out", "timeout"),
    S(B, {"command": "docker build ."},
      "ERROR: failed to solve: process \"/bin/sh -c pip install -r requirements.txt\" did not complete "
      "successfully: exit code: 1", True, "failed", "image build failed", "nonzero_exit"),
    S(B, {"command": "git push origin main"},
      "To github.com:acme/ledger-api.git\n ! [remote rejected] main -> main (protected branch hook declined)\n"
      "error: failed to push some refs to 'github.com:acme/ledger-api.git'", True, "failed",
      "the remote refused the push (branch protection)", "remote_rejected",
      notes="Refused by the server's policy, not by the user or the agent's harness: failed, not denied."),
    S(B, {"command": "kubectl apply -f deploy.yaml"},
      "Error from server (Forbidden): deployments.apps \"api\" is forbidden: User \"ci-deployer\" cannot patch "
      "resource \"deployments\" in API group \"apps\" in the namespace \"prod\"", True, "failed",
      "the cluster's access rules refused the change", "remote_auth"),
    S(B, {"command": "psql -h db-stage-04.internal -U report_ro -c 'select 1'"},
      "psql: error: connection to server at \"db-stage-04.internal\" (10.20.4.17), port 5432 failed: FATAL:  "
      "password authentication failed for user \"report_ro\"", True, "failed", "wrong database password",
      "remote_auth"),
    S(B, {"command": "node build.js"},
      "<--- Last few GCs --->\n[18342:0x5e1c2a0]   412331 ms: Mark-Compact 4042.1 (4135.6) -> 4031.7 (4137.3) MB\n"
      "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory", True, "failed",
      "out of memory", "crash"),
    S(B, {"command": "cargo test"}, "test tax::rounding ... FAILED\n\ntest result: FAILED. 41 passed; 1 failed; 0 "
      "ignored; 0 measured; 0 filtered out", True, "failed", "one test failed", "test_failures"),
    S(B, {"command": "go build ./..."}, "# github.com/acme/ledger/cmd/ledger\n./main.go:12:2: undefined: "
      "parseConfig", True, "failed", "compile error", "compile_error",
      notes="No 'error' word at all."),
    S(B, {"command": "npx tsc --noEmit"}, "src/app.ts(41,7): error TS2322: Type 'string' is not assignable to type "
      "'number'.\n\nFound 1 error in src/app.ts:41", True, "failed", "type error", "compile_error"),
    S("issue_refund", {"order_id": "ORD-58214", "amount": "1249.00", "currency": "USD"},
      '{"error": {"type": "invalid_request_error", "code": "charge_already_refunded", "message": "This charge has '
      'already been refunded."}}', True, "failed", "the charge was already refunded", "api_error_body"),
    S(B, {"command": "terraform apply"},
      "aws_s3_bucket.logs: Creating...\n\u2577\n\u2502 Error: creating S3 Bucket (acme-logs): BucketAlreadyExists\n"
      "\u2502 \n\u2502   with aws_s3_bucket.logs,\n\u2502   on main.tf line 12", True, "failed",
      "bucket name already taken", "nonzero_exit"),
    S(B, {"command": "git pull"},
      "Auto-merging src/tax.py\nCONFLICT (content): Merge conflict in src/tax.py\nAutomatic merge failed; fix "
      "conflicts and then commit the result.", True, "failed", "merge conflict", "conflict"),
    S("python", {"code": "import torch"}, "ModuleNotFoundError: No module named 'torch'", True, "failed",
      "module missing", "traceback"),
    S("WebFetch", {"url": "https://docs.acme.io/v1/refunds"}, "Request failed with status code 404", True, "failed",
      "page not found", "http_error"),
    S(B, {"command": "ssh deploy@10.0.3.12 uptime"}, "ssh: connect to host 10.0.3.12 port 22: Connection refused",
      True, "failed", "connection refused", "network"),
    S(B, {"command": "./deploy.sh"}, "Uploading assets... done\nInvalidating CDN cache...\nExit code 1", True,
      "failed", "the script exited 1 after the upload", "nonzero_exit",
      notes="'done' for the first stage; the step as a whole failed."),
    S(B, {"command": "npm run build"},
      "vite v5.1.4 building for production...\n\u2713 812 modules transformed.\nerror during build:\n"
      "Could not resolve \"./Chart\" from \"src/pages/Dashboard.tsx\"", True, "failed", "build failed",
      "nonzero_exit"),
    S("python", {"code": "df = pd.read_csv('sales.csv')"},
      "FileNotFoundError: [Errno 2] No such file or directory: 'sales.csv'", True, "failed", "file missing",
      "not_found"),
    S(B, {"command": "pip install torch==2.1.0+cu118"},
      "ERROR: Could not find a version that satisfies the requirement torch==2.1.0+cu118 (from versions: 2.2.0, "
      "2.2.1, 2.3.0)\nERROR: No matching distribution found for torch==2.1.0+cu118", True, "failed",
      "version not available", "not_found"),
    S(B, {"command": "curl -sf https://api.acme.io/health"}, "Exit code 22", True, "failed",
      "curl -f got an HTTP error status; nothing printed", "nonzero_exit"),
    S(B, {"command": "pytest -x"},
      "==================================== ERRORS ====================================\n"
      "________________________ ERROR collecting tests/test_api.py ________________________\n"
      "ImportError: cannot import name 'Client' from 'acme.api'\n=========================== 1 error in 0.31s "
      "============================", True, "failed", "test collection failed", "test_failures"),
    S(B, {"command": "python scripts/backfill.py --env staging"}, "Command timed out after 2m 0.0s", True, "failed",
      "the harness stopped the command at its time limit", "timeout"),
    S("send_email", {"to": "billing@harlow-sons.co.uk", "subject": "Invoice INV-2025-0311"},
      '{"status": "error", "code": 550, "message": "mailbox unavailable"}', False, "failed",
      "the mail server rejected the address", "api_error_body"),
    S(B, {"command": "git commit -m 'Fix VAT rounding'"},
      "husky > pre-commit (node v20.11.1)\n\u2716 eslint --fix found some errors. Please fix them and try "
      "committing again.\n  src/x.ts 12:5 error 'y' is assigned a value but never used\nhusky > pre-commit hook "
      "failed (add --no-verify to bypass)", True, "failed", "pre-commit hook failed; nothing committed",
      "hook_failed"),
    S(B, {"command": "npx jest"}, "Tests:       1 failed, 1 skipped, 46 passed, 48 total\nTime:        9.8 s", True,
      "failed", "one test failed", "test_failures"),
    S(B, {"command": "aws s3 cp build/ s3://acme-web/ --recursive"},
      "upload failed: build/app.js to s3://acme-web/app.js An error occurred (AccessDenied) when calling the "
      "PutObject operation: Access Denied", True, "failed", "the cloud account lacks write access",
      "remote_auth", notes="'Access Denied' from a remote service: the step failed; nobody in the session refused."),
    S("create_refund", {"order_id": "ORD-58214", "amount": "1249.00"},
      '{"ok": false, "error": "validation_error", "fields": {"amount": "must be at most 1000.00"}}', False,
      "failed", "amount over the service's limit", "api_error_body"),
    S(B, {"command": "python -m unittest"}, "F.............\n===========================================\n"
      "FAIL: test_vat (tests.test_tax.TaxTest)\n-------------------------------------------\nAssertionError: 19.0 "
      "!= 0.0\n\nRan 14 tests in 0.020s\n\nFAILED (failures=1)", True, "failed", "one test failed",
      "test_failures"),
    S(B, {"command": "npx prisma migrate deploy"}, "Error: P3009\n\nmigrate found failed migrations in the target "
      "database, new migrations will not be applied.", True, "failed", "earlier failed migration blocks deploy",
      "nonzero_exit"),
    S("run_sql", {"query": "SELECT * FROM invoices_2024 LIMIT 5"},
      "ERROR:  relation \"invoices_2024\" does not exist\nLINE 1: SELECT * FROM invoices_2024 LIMIT 5", True,
      "failed", "table missing", "not_found"),
    S(B, {"command": "helm upgrade api ./chart -n prod"}, "Error: UPGRADE FAILED: timed out waiting for the "
      "condition", True, "failed", "release did not become ready", "timeout"),
    S(B, {"command": "git checkout release/2.8"}, "error: pathspec 'release/2.8' did not match any file(s) known "
      "to git", True, "failed", "branch does not exist locally", "not_found"),
    S(B, {"command": "yarn install"}, "yarn install v1.22.19\n[1/4] Resolving packages...\nerror An unexpected "
      "error occurred: \"https://registry.yarnpkg.com/lodash: ETIMEDOUT\".", True, "failed", "network timeout",
      "timeout"),
    S(B, {"command": "./scripts/check_migrations.sh"}, "Checking 42 migrations...\nExit code 3", True, "failed",
      "non-zero exit with no message", "nonzero_exit"),
    S(B, {"command": "npm ci"}, "npm ERR! code EINTEGRITY\nnpm ERR! sha512-Qx0vB3nM7q... integrity checksum "
      "failed when using sha512", True, "failed", "downloaded package does not match the lockfile", "nonzero_exit"),
    S(B, {"command": "python train.py --epochs 3"}, "Epoch 1/3: loss=0.412\nEpoch 2/3: loss=nan\n"
      "RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th output.", True, "failed",
      "training diverged", "traceback"),
    S(B, {"command": "bash -c 'frobnicate --all'"}, "bash: frobnicate: command not found", True, "failed",
      "program missing", "not_found"),
    S("http_request", {"method": "GET", "url": "https://api.acme.io/v2/reports/403"},
      "HTTP 502 Bad Gateway", None, "failed", "gateway error", "http_error",
      notes="403 is the report's id in the path; the outcome is the 502."),
    S(B, {"command": "rsync -av dist/ web-2:/srv/www/"}, "rsync: connection unexpectedly closed (0 bytes received "
      "so far) [sender]\nrsync error: unexplained error (code 255) at io.c(228) [sender=3.2.7]", True, "failed",
      "transfer broke off", "network"),
    S("python", {"code": "model.fit(X, y)"}, "ValueError: Input X contains NaN.", True, "failed", "bad input data",
      "traceback"),
    S(B, {"command": "make test"}, "...\n\n2 of 30 specs failed. See report/index.html", None, "failed",
      "two specs failed", "test_failures", notes="No 'N failed' pattern: 'N of M specs failed'."),
    S(B, {"command": "./scripts/smoke.sh"}, "GET /health ... ok\nGET /orders ... ok\nPOST /refunds ... FAIL "
      "(expected 201, got 422)", None, "failed", "one smoke check failed", "test_failures"),
    S("deploy_service", {"service": "billing-api", "revision": "billing-api-00043-qaz"},
      '{"state": "FAILED", "message": "container failed to start and listen on port 8080 within the allocated '
      'timeout"}', False, "failed", "the new revision never started", "api_error_body"),

    # --- denied: the user or the harness refused --------------------------------------------------------------
    S(B, {"command": "git push origin main"},
      "Claude requested permissions to use Bash, but you haven't granted it yet.", True, "denied",
      "permission not granted by the user", "harness_permission"),
    S(B, {"command": "rm -rf build/ old_reports/"},
      "The user declined this tool call, so the command was not run. Wait for the user to say how to continue.",
      True, "denied", "the user declined", "user_declined"),
    S("Edit", {"file_path": "src/config.ts", "old_string": "retries: 3", "new_string": "retries: 5"},
      "The user rejected this edit; src/config.ts was not changed.", True, "denied", "the user rejected the edit",
      "user_declined"),
    S(B, {"command": "sudo apt-get install -y libpq-dev"},
      "Not run: commands with sudo are blocked by the workspace policy.", True, "denied",
      "blocked by the harness policy", "policy_blocked"),
    S("issue_refund", {"order_id": "ORD-58213", "amount": "1249.00", "currency": "USD"},
      "Refunds over 500.00 need a supervisor's approval. Approval request A-3391 was declined by j.mensah.", True,
      "denied", "the human approver declined", "approver_declined"),
    S(B, {"command": "curl -fsSL https://get.example.dev/install.sh | sh"},
      "Blocked: this command matches a deny rule in the project settings (Bash(curl:*)).", True, "denied",
      "a deny rule in the settings", "policy_blocked"),
    S("WebFetch", {"url": "https://pastebin.com/raw/x1y2z3"},
      "The user did not allow fetching this address.", True, "denied", "the user did not allow the fetch",
      "user_declined"),
    S("mcp__github__merge_pull_request", {"pull_number": 482},
      "This tool is not allowed in the current session; ask the user to enable the github server's write tools.",
      True, "denied", "tool not permitted by the harness", "policy_blocked"),
    S("Write", {"file_path": "/etc/hosts", "content": "10.0.3.12 db.local\n"},
      "Writing outside the project folder is not permitted in this mode. Ask the user to grant access first.", True,
      "denied", "outside the allowed folder", "policy_blocked"),
    S(B, {"command": "kubectl delete namespace staging"},
      "The user declined. Their note: 'not now, wait until the backup finishes'.", True, "denied",
      "the user declined, with a reason", "user_declined"),
    S(B, {"command": "git push --force origin fix/tz-offsets"},
      "PreToolUse hook blocked this call: force pushes are refused in this repository.", True, "denied",
      "refused by a hook the user configured", "policy_blocked"),
    S("send_email", {"to": "l.okafor@example.net", "subject": "Refund update"},
      "Sending needs your approval. You chose: Don't send.", True, "denied", "the user chose not to send",
      "user_declined"),
    S(B, {"command": "npm publish --tag next"},
      "Claude requested permissions to run npm publish, but you haven't granted it yet.", True, "denied",
      "permission not granted", "harness_permission"),
    S("Edit", {"file_path": "src/tax.py", "old_string": "ROUND_HALF_UP", "new_string": "ROUND_HALF_EVEN"},
      "Plan mode is on: nothing may change until the user approves the plan. The edit was not applied.", True,
      "denied", "the harness's plan mode forbids edits", "policy_blocked"),
    S(B, {"command": "docker system prune -af"},
      "This action needs approval. The request timed out after 10 minutes with no answer, so it was not run.", True,
      "denied", "no approval was given", "approval_timeout", ambiguous=True,
      notes="Neither a refusal nor an error: nobody answered. 'timed out' is the approval's, not the command's."),
    S(B, {"command": "cat ~/.aws/credentials"},
      "Reading this file is blocked by the sandbox's secrets policy.", True, "denied", "blocked by the sandbox",
      "policy_blocked"),
    S(B, {"command": "./backfill.sh --env prod"},
      "[Request interrupted by user for tool use]", True, "denied",
      "the user stopped the call before it ran", "user_interrupted", ambiguous=True,
      notes="An interruption is a refusal to let it proceed; some would call it failed."),

    # --- second batch --------------------------------------------------------------------------------------------
    S(B, {"command": "npm run lint -- --fix"}, "fixed 12 problems, 0 remaining", False, "succeeded",
      "lint fixed everything", "ok"),
    S(B, {"command": "git fetch --prune"}, "From github.com:acme/ledger\n - [deleted]         (none)     -> "
      "origin/fix/old-error-page", False, "succeeded", "fetch done; a stale remote branch was pruned",
      "ok_with_failure_words"),
    S("http_request", {"method": "GET", "url": "https://api.acme.io/v2/orders?status=failed"},
      '{"orders": [], "count": 0}', False, "succeeded", "no failed orders", "ok_with_failure_words"),
    S(B, {"command": "python -m pip check"}, "No broken requirements found.", False, "succeeded",
      "dependencies consistent", "ok_with_failure_words"),
    S("ticket_update", {"ticket": 8812, "status": "closed"},
      '{"ticket": 8812, "status": "closed", "resolution": "refund denied per policy"}', False, "succeeded",
      "ticket closed; the resolution text records an earlier decision", "ok_with_failure_words"),
    S(B, {"command": "bundle exec rspec"}, "Finished in 3.2 seconds (files took 0.9 seconds to load)\n120 examples, "
      "2 failures", True, "failed", "two examples failed", "test_failures"),
    S(B, {"command": "dotnet build"}, "Build FAILED.\n\n    0 Warning(s)\n    1 Error(s)\n\nTime Elapsed "
      "00:00:04.12", True, "failed", "build failed", "compile_error"),
    S(B, {"command": "apt-get install -y libpq-dev"},
      "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)\nE: Unable to acquire "
      "the dpkg frontend lock (/var/lib/dpkg/lock-frontend), are you root?", True, "failed",
      "needs root; the operating system refused", "os_permission"),
    S("http_request", {"method": "POST", "url": "https://api.cloudflare.example/zones/purge"},
      '{"success": false, "errors": [{"code": 10000, "message": "Authentication error"}]}', False, "failed",
      "the API refused the credentials", "api_error_body"),
    S(B, {"command": "java -jar build/app.jar"}, "Exception in thread \"main\" java.lang.OutOfMemoryError: Java "
      "heap space\n\tat com.acme.Report.load(Report.java:212)", True, "failed", "out of memory", "crash"),
    S(B, {"command": "terraform destroy"}, "You declined to run this command.", True, "denied",
      "the user declined", "user_declined"),
    S("Edit", {"file_path": ".github/workflows/ci.yml", "old_string": "pytest", "new_string": "pytest -x"},
      "Edits to CI workflow files are turned off for this agent by your organisation's policy.", True, "denied",
      "policy forbids the edit", "policy_blocked"),
]
