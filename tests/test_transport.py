"""pilot/transport.py: how calls reach the server. A server that leaves Nagle's algorithm on (no TCP_NODELAY,
a reply's headers and body in two writes, as Python's http.server does) makes every reply on a kept-alive
connection wait for the client's delayed ACK; the client measures that on its first calls and stops it.

The timing assertions compare figures measured side by side in the same moments (calls interleaved, runs
alternated), with margins far below the 40 ms a stall costs per call, so that a loaded machine moves both."""
import contextlib
import http.client
import json
import os
import signal
import statistics
import threading
import time
import unittest
from unittest import mock

from fake_servers import FakeOllama
from helpers import FAST, TempDirMixin, run_main
from pilot import backends, records, transport

MODEL = "m:1"
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "ABCDEF is 5.\nQuestion: what is ABCDEF?"}],
        "stream": False, "options": {"num_predict": 50}}
STALL_MS = 40           # the shortest delayed ACK (Linux); elsewhere it is longer


def fresh_connection_call(url: str) -> float:
    """One chat call on a new connection, as a client that never keeps connections does; seconds."""
    host, port = url.rsplit("/", 1)[-1].split(":")
    started = time.perf_counter()
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("POST", "/api/chat", body=json.dumps(CHAT).encode(), headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        reply.read()
    finally:
        conn.close()
    return time.perf_counter() - started


def kept_alive_call(client: transport.HttpClient) -> float:
    started = time.perf_counter()
    client.request("POST", "/api/chat", CHAT)
    return time.perf_counter() - started


def calls_until_chosen(client: transport.HttpClient, calls: int) -> tuple[dict | None, list[float]]:
    """`calls` chat calls; the connection choice they led to (None if none) and each call's seconds."""
    choice, times = None, []
    for _ in range(calls):
        times.append(kept_alive_call(client))
        choice = choice or client.take_connection_choice()
    return choice, times


class LateBodyOllama(FakeOllama):
    """A server that sends every reply's body 50 ms after its headers, on any connection (a slow proxy, say)."""

    def handler_class(self):
        class Handler(super().handler_class()):
            def end_headers(self):
                super().end_headers()
                time.sleep(0.05)
        return Handler


class NagleServerTest(unittest.TestCase):
    def test_the_nagle_server_stalls_kept_alive_replies_and_not_new_connections(self):
        # the premise of the tests below, shown with the standard library's own client
        with FakeOllama(models=[MODEL], nagle=True) as server:
            host, port = server.url.rsplit("/", 1)[-1].split(":")
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
            kept = []
            for _ in range(4):
                started = time.perf_counter()
                conn.request("POST", "/api/chat", body=json.dumps(CHAT).encode())
                conn.getresponse().read()
                kept.append(time.perf_counter() - started)
            conn.close()
            fresh = [fresh_connection_call(server.url) for _ in range(4)]
        self.assertGreaterEqual(statistics.median(kept[1:]) * 1000, STALL_MS * 0.9, kept)
        self.assertLess(statistics.median(fresh) * 1000, STALL_MS / 2, fresh)

    def test_the_client_is_within_a_few_ms_of_a_fresh_connection_client(self):
        with FakeOllama(models=[MODEL], nagle=True) as server:
            client = transport.HttpClient(server.url, 5, 30)
            ours, fresh, decided_at = [], [], None
            for i in range(60):             # interleaved, so that a slow moment of the machine slows both
                ours.append(kept_alive_call(client))
                fresh.append(fresh_connection_call(server.url))
                choice = client.take_connection_choice()
                if choice:
                    decided_at = i
            client.close()
        self.assertIsNotNone(decided_at, "no choice was made")
        self.assertLessEqual(decided_at, 15)
        after = slice(decided_at + 1, None)
        # once chosen, a call costs what a fresh connection's does, give or take 2 ms (the stall was 40)
        self.assertLessEqual(statistics.median(ours[after]) * 1000, statistics.median(fresh[after]) * 1000 + 2,
                             (ours, fresh))
        # and over every call, the measuring included: within 5 ms per call
        self.assertLessEqual(sum(ours) / len(ours) * 1000, sum(fresh) / len(fresh) * 1000 + 5, (ours, fresh))

    def test_the_choice_names_the_waits_it_measured(self):
        with FakeOllama(models=[MODEL], nagle=True) as server:
            client = transport.HttpClient(server.url, 5, 30)
            choice, _ = calls_until_chosen(client, 20)
            client.close()
        self.assertIn(choice["way"], ("quickack", "new"))
        waits = choice["body_wait_ms"]
        self.assertGreaterEqual(waits["kept_alive"], STALL_MS * 0.9)
        self.assertLess(waits["new_connection"], STALL_MS / 2)
        self.assertIsNone(client.take_connection_choice())      # said once

    def test_without_tcp_quickack_every_call_goes_on_a_new_connection(self):
        # where the platform has no TCP_QUICKACK (macOS, Windows), or it does not help
        with FakeOllama(models=[MODEL], nagle=True) as server:
            client = transport.HttpClient(server.url, 5, 30, policy=transport.ConnectionPolicy(False))
            choice, times = calls_until_chosen(client, 20)
            opened = server.httpd.connections_opened
            times += calls_until_chosen(client, 5)[1]
            client.close()
            self.assertEqual(server.httpd.connections_opened - opened, 5)
        self.assertEqual(choice["connections"], transport.NEW_PER_CALL)
        self.assertLess(statistics.median(times[-10:]) * 1000, STALL_MS / 2, times)

    def test_a_server_with_tcp_nodelay_keeps_one_connection(self):
        with FakeOllama(models=[MODEL]) as server:
            client = transport.HttpClient(server.url, 5, 30)
            choice, _ = calls_until_chosen(client, 10)
            client.close()
            self.assertEqual(server.httpd.connections_opened, 1)
        self.assertEqual(choice["connections"], transport.KEPT_ALIVE)
        self.assertEqual(choice["calls_measured"], 4)          # the first call's new connection, then 3 kept alive

    def test_a_server_late_on_every_connection_keeps_its_connections(self):
        # the body comes late on new connections too: nothing to gain from them, so none are made after the check
        with LateBodyOllama(models=[MODEL]) as server:
            client = transport.HttpClient(server.url, 5, 30)
            choice, _ = calls_until_chosen(client, 12)
            opened = server.httpd.connections_opened
            calls_until_chosen(client, 3)
            client.close()
            self.assertEqual(server.httpd.connections_opened, opened)
        self.assertEqual(choice["connections"], transport.KEPT_ALIVE)
        self.assertIn("late", choice["why"])

    def test_one_slow_reply_decides_nothing(self):
        policy = transport.ConnectionPolicy()
        for wait in (0.05, 0.0, 0.0, 0.0):
            policy.observe(True, False, wait)
        self.assertEqual(policy.take_choice()["connections"], transport.KEPT_ALIVE)
        policy = transport.ConnectionPolicy()
        for wait in (0.05, 0.0, 0.05):
            policy.observe(True, False, wait)
        self.assertIsNone(policy.take_choice())
        self.assertEqual(policy.next_call(), (True, False))


class ExchangeTest(unittest.TestCase):
    def test_a_request_goes_out_in_one_write(self):
        # http.client writes the headers and the body apart: two system calls, two segments
        writes = []
        send = transport._TimedHTTPConnection.send
        with FakeOllama(models=[MODEL]) as server, \
                mock.patch.object(transport._TimedHTTPConnection, "send",
                                  lambda conn, data: writes.append(len(data)) or send(conn, data)):
            client = transport.HttpClient(server.url, 5, 30)
            client.request("POST", "/api/chat", CHAT)
            client.close()
        self.assertEqual(len(writes), 1, writes)
        self.assertGreater(writes[0], len(json.dumps(CHAT)))

    def test_a_reply_longer_than_any_chat_reply_is_garbage_read_no_further(self):
        """A server that streamed 40 MB for a call capped at 256 tokens made the run hold a gigabyte and write a
        290 MB log (the hostile review); past MAX_REPLY_BYTES the reply is a transient error, retried."""
        with FakeOllama(models=[MODEL]) as server, mock.patch.object(transport, "MAX_REPLY_BYTES", 4000):
            server.faults = [("text", "x" * 8000)]
            client = transport.HttpClient(server.url, 5, 30)
            with self.assertRaises(transport.TransientError) as caught:     # a server that ignores the cap
                client.request("POST", "/api/chat", dict(CHAT, options={"num_predict": -1}))
            self.assertIn("the reply is longer than", str(caught.exception))
            self.assertIn("ANSWER: 5", client.request("POST", "/api/chat", CHAT)["message"]["content"])
            client.close()

    def test_the_slot_is_held_for_the_exchange_alone(self):
        # the request is encoded before the slot is taken and the reply parsed after it is given back
        events = []

        class Slot:
            @contextlib.contextmanager
            def sending(self, send):
                events.append("slot taken")
                send()
                yield
                events.append("slot given back")

        def noted(event, function):             # on this thread: the in-process server uses json too
            def note(*args, **kwargs):
                if threading.current_thread() is threading.main_thread():
                    events.append(event)
                return function(*args, **kwargs)
            return note

        with FakeOllama(models=[MODEL]) as server, \
                mock.patch.object(transport.json, "dumps", noted("encoded", json.dumps)), \
                mock.patch.object(transport.json, "loads", noted("parsed", json.loads)):
            client = transport.HttpClient(server.url, 5, 30)
            reply = client.request("POST", "/api/chat", CHAT, slot=Slot())
            client.close()
        self.assertEqual(events, ["encoded", "slot taken", "slot given back", "parsed"])
        self.assertIn("ANSWER: 5", reply["message"]["content"])


class ReplyDeadlineTest(TempDirMixin, unittest.TestCase):
    """A reply that drips never ends on its own: headers promising 100,000 bytes and then one byte every 0.3 s, or the
    headers themselves one byte at a time, trip no read timeout. Each call has a deadline for its whole reply, and a
    stop ends a run whose call will not finish. Every case here is bounded: deadlines of 1-2 s, drips every 0.3 s."""

    def test_a_reply_that_drips_ends_at_its_deadline(self):
        for fault in ("drip", "drip_headers"):
            with self.subTest(fault), FakeOllama(models=[MODEL]) as server:
                server.faults = [(fault, 0.3, 10)]
                client = transport.HttpClient(server.url, 5, read_timeout=1.0, reply_deadline=1.5)
                started = time.monotonic()
                with self.assertRaises(transport.TransientError) as caught:
                    client.request("POST", "/api/chat", CHAT)
                took = time.monotonic() - started
                self.assertTrue(server.dripping.is_set())
                self.assertGreaterEqual(took, 1.4)
                self.assertLess(took, 4, "the read timeout alone would have waited for the 10 s drip to end")
                self.assertEqual(caught.exception.reason, transport.DEADLINE_REASON)
                self.assertTrue(caught.exception.unreachable)      # no reply: it counts toward --give-up-after
                self.assertIn("no whole reply within 1.5 s", str(caught.exception))
                # the client goes on: its next call is answered whole
                self.assertIn("ANSWER: 5", client.request("POST", "/api/chat", CHAT)["message"]["content"])
                client.close()

    def test_the_server_check_has_a_deadline_too(self):
        class DrippingChecks(FakeOllama):
            def handler_class(self):
                class Handler(super().handler_class()):
                    def do_GET(self):
                        self._drip(True, 0.3, 10)
                return Handler

        with DrippingChecks(models=[MODEL]) as server:
            backend = backends.OllamaBackend(server.url, 5, 30)
            self.assertEqual(backend.http.reply_deadline, 60)        # by default twice the read timeout
            self.assertEqual(backend.preflight_http.reply_deadline, 4 * records.PREFLIGHT_TIMEOUT_S)
            backend.preflight_http.reply_deadline = 1
            started = time.monotonic()
            with self.assertRaises(records.PilotError) as caught:
                backends.preflight(backend, [MODEL])
            self.assertLess(time.monotonic() - started, 4)
            self.assertIn("no whole reply within 1 s", str(caught.exception))

    def test_a_run_gives_up_a_dripping_reply_and_retries_it(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("drip", 0.3, 10), ("drip_headers", 0.3, 10)]
            started = time.monotonic()
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out), "--episodes",
                                     "1", *FAST, "--read-timeout", "1", "--reply-deadline", "1.5"])
            took = time.monotonic() - started
        self.assertEqual(code, 0, err)
        self.assertLess(took, 8, err)
        records = [json.loads(line) for path in (out / "raw").glob("*.jsonl") for line in path.read_text().splitlines()]
        self.assertEqual(len(records), 32)
        # the first call dripped its body, then its headers, and was answered whole at its third attempt
        self.assertEqual(sorted(r["attempt"] for r in records), [1] * 31 + [3])

    def test_a_server_that_only_drips_stops_the_run_as_a_dead_one(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("drip", 0.3, 10)] * 5
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out), "--episodes",
                                     "1", *FAST, "--read-timeout", "1", "--reply-deadline", "1", "--give-up-after",
                                     "1.5"])
        self.assertEqual(code, 3, err)
        self.assertIn("sent none whole within the reply deadline (1 s", err)
        self.assertIn("--reply-deadline 60", err)

    def test_a_stop_ends_a_run_whose_call_will_not_finish(self):
        """SIGTERM while the only call in flight drips for ever (its deadline is a minute away): the run gives the
        call STOP_GRACE_S (half a second here), exits 130 with everything journalled kept, and resumes."""
        out = self.make_tmp() / "run"
        argv = ["run", "--models", MODEL, "--episodes", "1", "--out", str(out), *FAST, "--reply-deadline", "60"]
        with FakeOllama(models=[MODEL]) as server, mock.patch.object(transport, "STOP_GRACE_S", 0.5):
            server.faults = [("delay", 0)] * 5 + [("drip", 0.3, 30)]     # the 6th call drips

            def stop_when_dripping():
                if server.dripping.wait(20) and signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
                    os.kill(os.getpid(), signal.SIGTERM)        # the runner's handler is in place: it stops the run
            stopper = threading.Thread(target=stop_when_dripping, daemon=True)
            stopper.start()
            started = time.monotonic()
            code, _, err = run_main([*argv, "--host", server.url])
            took = time.monotonic() - started
            stopper.join(5)
            self.assertEqual(code, 130, err)
            self.assertLess(took, 10, err)
            self.assertIn("waiting up to 0.5 s for the calls in flight", err)
            self.assertIn("Resume with:", err)
            kept = [line for path in (out / "raw").glob("*.jsonl") for line in path.read_text().splitlines()]
            self.assertEqual(len(kept), 5)                          # every call that ended is journalled
            code, _, err = run_main([*argv, "--host", server.url])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 6 + 27)           # only the dripping call was sent again
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)


class RunnerConnectionsTest(TempDirMixin, unittest.TestCase):
    def run_pilot(self, server, out, *extra):
        started = time.perf_counter()
        code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "2",
                                 *FAST, *extra])
        return code, err, time.perf_counter() - started

    def test_against_a_nagle_server_the_runner_is_within_a_few_ms_per_call(self):
        # the same runs alternated against a server with TCP_NODELAY and one without: the runner's own costs are the
        # same in both, so what differs is what the stall (40 ms a call before) and its measuring still cost
        tmp = self.make_tmp()
        walls = {True: [], False: []}
        with FakeOllama(models=[MODEL], nagle=True) as nagle, FakeOllama(models=[MODEL]) as nodelay:
            for i in range(2):
                for server in (nagle, nodelay):
                    code, err, wall = self.run_pilot(server, tmp / f"{server.nagle}-{i}")
                    self.assertEqual(code, 0, err)
                    walls[server.nagle].append(wall)
        calls = 64
        self.assertLessEqual(min(walls[True]) / calls * 1000, min(walls[False]) / calls * 1000 + 8, walls)

    def test_the_choice_is_said_once_and_recorded_and_a_resume_is_not_refused(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("status", 503, {"error": "busy"})] * 4        # the first cell fails: a run to resume
            code, err, _ = self.run_pilot(server, out)
            self.assertEqual(code, 3, err)
            self.assertNotIn("connections:", err)
            manifest = json.loads((out / "manifest.json").read_text())
            self.assertEqual([e["connections"] for e in manifest["connections"]], [transport.KEPT_ALIVE])
            self.assertNotIn("connections", manifest["lock"])
            server.nagle = True             # the same server, now without TCP_NODELAY on its new connections
            code, err, _ = self.run_pilot(server, out)
            self.assertEqual(code, 0, err)
        lines = [line for line in err.splitlines() if line.startswith("connections:")]
        self.assertEqual(len(lines), 1, err)
        self.assertIn("Nagle", lines[0])
        manifest = json.loads((out / "manifest.json").read_text())
        recorded = manifest["connections"]
        self.assertEqual(len(recorded), 2)
        self.assertIn(recorded[1]["connections"], (transport.KEPT_ALIVE_QUICKACK, transport.NEW_PER_CALL))
        self.assertEqual(recorded[1]["server"], server.url)
        self.assertGreaterEqual(recorded[1]["body_wait_ms"]["kept_alive"], STALL_MS * 0.9)
        self.assertIn(recorded[1]["connections"], lines[0])

    def test_the_connection_is_chosen_before_the_first_call(self):
        # the check before the run measures it on its own small requests, so that the run's first wave goes out at
        # once on the chosen connections (before, its first calls measured it, and on a server without
        # TCP_NODELAY some of them waited for the client's delayed ACK)
        for nagle in (False, True):
            with self.subTest(nagle=nagle), FakeOllama(models=[MODEL], nagle=nagle) as server:
                out = self.make_tmp() / f"run-{nagle}"
                code, err, _ = self.run_pilot(server, out, "--concurrency", "4")
                self.assertEqual(code, 0, err)
                first_chat = next(i for i, r in enumerate(server.requests) if r[1] == "/api/chat")
                checks = [r for r in server.requests[:first_chat] if r[1] == "/api/version"]
                choice = json.loads((out / "manifest.json").read_text())["connections"][0]
                self.assertLessEqual(choice["calls_measured"], first_chat)       # no chat call among them
                if nagle:                           # three ways measured: more than the check's own requests
                    self.assertGreaterEqual(len(checks), 3, server.requests[:first_chat])
                self.assertEqual(choice["connections"] == transport.KEPT_ALIVE, not nagle)

    def test_a_manifest_whose_connections_are_not_a_list_is_refused(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(self.run_pilot(server, out)[0], 0)
            path = out / "manifest.json"
            manifest = json.loads(path.read_text())
            manifest["connections"] = "kept alive"
            path.write_text(json.dumps(manifest))
            code, err, _ = self.run_pilot(server, out)
        self.assertEqual(code, 2)
        self.assertIn("`connections` is of the wrong type", err)


if __name__ == "__main__":
    unittest.main()
