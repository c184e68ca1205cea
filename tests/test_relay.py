"""``acti-store relay``: every change reaches a flaky webhook, in order, signed, at least once.

The receiver is a real HTTP server in a thread of the test: it answers every third request with
503 and drops one connection without an answer, and checks each delivery as the documented
receiver does (``acti_store.relay_signature.DeliveryReceiver``: the signature, the timestamp,
repeats). The relay runs in a process
of its own, is killed with SIGKILL midway and started again under the same name: in the end every
change arrived, in seq order, each signature holds, and the saved position is the last seq.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import make_config
from test_cli_errors_commands import environment

from acti_store import open_repository
from acti_store.relay_signature import (
    DeliveryError,
    DeliveryReceiver,
    RepeatedDeliveryError,
    delivery_id,
    verify_delivery,
)

pytestmark = pytest.mark.slow  # the relay runs in processes of its own

SECRET = "s3cret: the relay's signing key, not in any command line"
SECRET_ENV = "ACTI_TEST_RELAY_SECRET"
RELAY = "test_relay"


@dataclass
class Receiver:
    """What the webhook saw. ``answer(n)`` decides the status of the n-th request (1, 2, ...):
    an HTTP status, or ``None`` to drop the connection without answering."""

    answer: Callable[[int], int | None]
    requests: int = 0
    accepted: list[int] = field(default_factory=list)  # the seq of each 2xx, in order
    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)  # by id: the first copy
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    checks: DeliveryReceiver = field(default_factory=lambda: DeliveryReceiver(SECRET))
    #: Every request as it came: its headers and body (to replay them).
    raw: list[tuple[dict[str, str], bytes]] = field(default_factory=list)

    def receive(self, headers: Any, body: bytes) -> int | None:
        with self.lock:
            self.requests += 1
            self.raw.append((dict(headers.items()), body))
            status = self.answer(self.requests)
            if headers.get("Content-Type") != "application/json":
                self.problems.append(f"request {self.requests}: {headers.get('Content-Type')}")
            if status is None or not 200 <= status < 300:
                return status
            try:
                with self.checks.receive(headers, body) as delivery:
                    if self.bodies.setdefault(delivery.id, delivery.change) != delivery.change:
                        self.problems.append(f"{delivery.id} delivered with another body")
            except RepeatedDeliveryError:  # handled already: answered 2xx, not handled again
                again = verify_delivery(SECRET, headers, body)
                if self.bodies[again.id] != again.change:
                    self.problems.append(f"{again.id} delivered again with another body")
            except DeliveryError as exc:
                self.problems.append(f"request {self.requests}: {exc}")
                return 401
            self.accepted.append(json.loads(body)["seq"])
            return status

    def delivered(self) -> list[int]:
        """The seqs delivered, each once (a re-delivery is recognised by its seq)."""
        with self.lock:
            return list(dict.fromkeys(self.accepted))


@contextmanager
def serve(receiver: Receiver) -> Iterator[str]:
    """The receiver's URL, served by a thread until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status = receiver.receive(self.headers, body)
            if status is None:  # drop the connection: no answer at all
                self.close_connection = True
                return
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/acti"
    finally:
        server.shutdown()
        server.server_close()


def relay_env(secret: str | None = SECRET) -> dict[str, str]:
    env = {**environment(), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    env.pop(SECRET_ENV, None)
    if secret is not None:
        env[SECRET_ENV] = secret
    return env


def start_relay(url: str, webhook: str, folder: Path, run: int) -> subprocess.Popen[bytes]:
    """The relay in a process of its own, its output in files (``run`` numbers them)."""
    argv = ["relay", "--webhook", webhook, "--secret-env", SECRET_ENV, "--name", RELAY]
    return subprocess.Popen(
        [sys.executable, "-m", "acti_store", *argv, "--url", url],
        stdout=(folder / f"stdout{run}").open("wb"),
        stderr=(folder / f"stderr{run}").open("wb"),
        env=relay_env(),
    )


def wait_for(
    condition: Callable[[], bool],
    what: str,
    relay: subprocess.Popen[bytes],
    stderr: Path,
    timeout: float = 90,
) -> None:
    """Wait until ``condition`` holds, failing with the relay's stderr if the relay ends first."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert relay.poll() is None, f"the relay ended ({relay.returncode}): {stderr.read_text()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def make_changes(url: str, first: int, count: int) -> None:
    """``count`` changes of every common kind, on agents numbered from ``first``."""
    with open_repository(url) as repo:
        for number in range(first, first + count):
            name = f"agent_{number // 4}"
            match number % 4:
                case 0:
                    repo.create(make_config(name))
                case 1:
                    repo.update(name, {"description": f"Qualifies leads, take {number}"})
                case 2:
                    repo.set_label(name, "production", 2)
                case _:
                    repo.delete(name)


def checkpoint(url: str) -> int | None:
    with open_repository(url) as repo:
        return repo.checkpoint(RELAY)


def printed_last(stdout: Path) -> int | None:
    """The seq of the last change line the relay printed so far."""
    lines = stdout.read_text().splitlines()
    return int(lines[-1].split()[0]) if lines else None


def flaky(request: int) -> int | None:
    """Every third request: 503; the fifth: a dropped connection; the rest: 200 (some 204)."""
    if request == 5:
        return None
    if request % 3 == 0:
        return 503
    return 204 if request % 7 == 0 else 200


def test_every_change_arrives_in_order_across_a_kill(store_url: str, tmp_path: Path) -> None:
    make_changes(store_url, 0, 20)
    receiver = Receiver(flaky)
    with serve(receiver) as url:
        first = start_relay(store_url, url, tmp_path, 1)
        try:
            wait_for(
                lambda: len(receiver.delivered()) >= 8, "8 deliveries", first, tmp_path / "stderr1"
            )
        finally:
            first.kill()  # SIGKILL: no chance to save anything more
            first.wait(timeout=30)
        at_kill = checkpoint(store_url)
        assert at_kill is not None and at_kill <= max(receiver.delivered())
        second = start_relay(store_url, url, tmp_path, 2)
        try:
            make_changes(store_url, 20, 12)  # while it runs: it follows the feed
            with open_repository(store_url) as repo:
                seqs = [c.seq for c in repo.changes(limit=1000)]
            assert len(seqs) >= 32
            wait_for(  # the relay saves its position, then prints the change's line
                lambda: checkpoint(store_url) == seqs[-1] == printed_last(tmp_path / "stdout2"),
                "the last seq's checkpoint and line",
                second,
                tmp_path / "stderr2",
            )
            second.send_signal(signal.SIGTERM)
            assert second.wait(timeout=30) == 0, (tmp_path / "stderr2").read_text()
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
    assert receiver.problems == []
    assert receiver.delivered() == seqs  # each change, in seq order
    # Strictly in order: a 2xx only ever for the next seq, or again for one delivered already
    # (the relay was killed between the receiver's answer and saving its position).
    position = {seq: index for index, seq in enumerate(seqs)}
    newest = -1
    for seq in receiver.accepted:
        assert position[seq] <= newest + 1, receiver.accepted
        newest = max(newest, position[seq])
    assert len(receiver.accepted) - len(seqs) <= 1, receiver.accepted
    with open_repository(store_url) as repo:  # each body is the change as the store has it
        assert [
            receiver.bodies[delivery_id(c.tenant, c.seq)] for c in repo.changes(limit=1000)
        ] == [json.loads(json.dumps(c.to_json())) for c in repo.changes(limit=1000)]
    assert checkpoint(store_url) == seqs[-1]
    stderr = (tmp_path / "stderr1").read_text() + (tmp_path / "stderr2").read_text()
    assert "Traceback" not in stderr
    assert "not delivered (HTTP 503 Service Unavailable); trying again in" in stderr
    failures = [line for line in stderr.splitlines() if line.startswith("warning: change ")]
    # One line per failure; the kill may have come before the relay printed its last one.
    assert 0 <= receiver.requests - len(receiver.accepted) - len(failures) <= 1
    printed = (tmp_path / "stdout1").read_text() + (tmp_path / "stdout2").read_text()
    assert [int(line.split()[0]) for line in printed.splitlines()][-1] == seqs[-1]


def test_a_refusal_stops_the_relay_at_that_change(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    make_changes(url, 0, 3)
    receiver = Receiver(lambda request: 200 if request == 1 else 400)
    with serve(receiver) as hook:
        argv = ["relay", "--webhook", hook, "--secret-env", SECRET_ENV, "--name", RELAY]
        done = subprocess.run(
            [sys.executable, "-m", "acti_store", *argv, "--url", url],
            capture_output=True,
            text=True,
            env=relay_env(),
            timeout=120,
            check=False,
        )
    with open_repository(url) as repo:
        seqs = [c.seq for c in repo.changes()]
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"error: the webhook refused change {seqs[1]} with HTTP 400 Bad Request: nothing after "
        "it was delivered (fix the receiver, then start the relay again: it resumes at change "
        f"{seqs[1]})"
    ]
    assert receiver.accepted == [seqs[0]] and receiver.requests == 2  # not retried, not skipped
    assert checkpoint(url) == seqs[0]


@pytest.mark.parametrize("secret", [None, ""], ids=["unset", "empty"])
def test_a_missing_secret_is_refused_before_the_store_is_opened(
    tmp_path: Path, secret: str | None
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    argv = ["relay", "--webhook", "http://127.0.0.1:9/", "--secret-env", SECRET_ENV]
    done = subprocess.run(
        [sys.executable, "-m", "acti_store", *argv, "--name", RELAY, "--url", url],
        capture_output=True,
        text=True,
        env=relay_env(secret),
        timeout=120,
        check=False,
    )
    state = "not set" if secret is None else "empty"
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"error: the environment variable {SECRET_ENV} is {state}: set it to the webhook's "
        "secret (the relay signs every body with it)\n"
    )
    assert not (tmp_path / "store.db").exists()


@dataclass
class Trickler:
    """A receiver that answers its first request 200 and then trickles the answer's body, one
    byte a second, for a minute; it answers every later request at once. ``requests``: when
    each came (monotonic) and the change it carried."""

    requests: list[tuple[float, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seqs(self) -> list[int]:
        with self.lock:
            return [seq for _, seq in self.requests]


@contextmanager
def serve_trickling(receiver: Trickler) -> Iterator[str]:
    """The trickling receiver's URL, served by threads of a socket server until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with receiver.lock:
                receiver.requests.append((time.monotonic(), json.loads(body)["seq"]))
                first = len(receiver.requests) == 1
            self.send_response(200)
            self.send_header("Content-Length", "60" if first else "0")
            self.end_headers()
            if not first:
                return
            for _ in range(60):  # a minute, one byte a second, unless the relay hangs up
                try:
                    self.wfile.write(b".")
                    self.wfile.flush()
                except OSError:
                    return
                if receiver.stop.wait(1.0):
                    return

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/acti"
    finally:
        receiver.stop.set()
        server.shutdown()
        server.server_close()


def test_a_trickled_answer_is_cut_off_at_the_deadline_and_tried_again(tmp_path: Path) -> None:
    """One deadline for the whole exchange: a 200 whose body comes a byte a second is not a
    delivery; the relay gives up at its --timeout, says so, keeps its position before the change,
    and delivers the change again."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    make_changes(url, 0, 2)
    with open_repository(url) as repo:
        seqs = [c.seq for c in repo.changes()]
    receiver = Trickler()
    with serve_trickling(receiver) as hook:
        argv = ["relay", "--webhook", hook, "--secret-env", SECRET_ENV, "--name", RELAY]
        relay = subprocess.Popen(
            [sys.executable, "-m", "acti_store", *argv, "--timeout", "2", "--url", url],
            stdout=(tmp_path / "stdout").open("wb"),
            stderr=(tmp_path / "stderr").open("wb"),
            env=relay_env(),
        )
        try:
            wait_for(
                lambda: len(receiver.seqs()) >= 1, "the first request", relay, tmp_path / "stderr"
            )
            assert checkpoint(url) is None  # the change is being trickled: not delivered
            wait_for(lambda: len(receiver.seqs()) >= 2, "the retry", relay, tmp_path / "stderr", 30)
            wait_for(
                lambda: checkpoint(url) == seqs[-1] == printed_last(tmp_path / "stdout"),
                "the last seq's checkpoint and line",
                relay,
                tmp_path / "stderr",
            )
            relay.send_signal(signal.SIGTERM)
            assert relay.wait(timeout=30) == 0
        finally:
            if relay.poll() is None:
                relay.kill()
                relay.wait()
    with receiver.lock:
        (first, _), (retry, _) = receiver.requests[:2]
    assert receiver.seqs() == [seqs[0], *seqs]  # the first change again, then the next
    # Cut off at 2 s, then a pause of at most 0.1 s: far less than the minute of trickling
    # (the bound leaves room for a loaded machine).
    assert 2.0 <= retry - first < 15.0, retry - first
    stderr = (tmp_path / "stderr").read_text()
    assert "Traceback" not in stderr
    assert stderr.startswith(
        f"warning: change {seqs[0]} not delivered (no whole answer within 2 s); trying again in "
    ), stderr
    assert len(stderr.splitlines()) == 1


def test_two_tenants_relays_feed_one_receiver_and_a_captured_delivery_is_refused(
    tmp_path: Path,
) -> None:
    """Both tenants' feeds start at 1: each delivery names its tenant and its id is unique per
    store, so one receiver handles both; a captured delivery replayed under a higher id, or
    later than 5 minutes, is refused, and replayed as it was it is a repeat."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    tenants = ("acme", "globex")
    for tenant in tenants:
        with open_repository(url, tenant=tenant) as repo:
            repo.create(make_config("agent_0"))
            repo.update("agent_0", {"description": f"Qualifies {tenant}'s leads"})
    receiver = Receiver(lambda request: 200)
    relays: list[subprocess.Popen[bytes]] = []
    with serve(receiver) as hook:
        try:
            for tenant in tenants:
                argv = ["relay", "--webhook", hook, "--secret-env", SECRET_ENV, "--name", RELAY]
                relays.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "acti_store", *argv, "--url", url],
                        stdout=(tmp_path / f"stdout-{tenant}").open("wb"),
                        stderr=(tmp_path / f"stderr-{tenant}").open("wb"),
                        env={**relay_env(), "ACTI_STORE_TENANT": tenant},
                    )
                )
            for tenant, relay in zip(tenants, relays, strict=True):
                wait_for(
                    lambda tenant=tenant: receiver.checks.handled.get(tenant) == 2,  # type: ignore[misc]
                    f"{tenant}'s two changes",
                    relay,
                    tmp_path / f"stderr-{tenant}",
                )
        finally:
            for relay in relays:
                relay.kill()
                relay.wait()
    assert receiver.problems == []
    assert receiver.checks.handled == {"acme": 2, "globex": 2}
    ids = [headers["X-Acti-Delivery"] for headers, _ in receiver.raw]
    assert sorted(ids) == ["acme:1", "acme:2", "globex:1", "globex:2"]
    for headers, body in receiver.raw:
        assert headers["X-Acti-Tenant"] == json.loads(body)["tenant"]

    headers, body = receiver.raw[0]
    replayed = {**headers, "X-Acti-Delivery": headers["X-Acti-Delivery"].split(":")[0] + ":99"}
    with pytest.raises(DeliveryError, match="signature does not match"):
        verify_delivery(SECRET, replayed, body)
    with pytest.raises(RepeatedDeliveryError), receiver.checks.receive(headers, body):
        pass
    later = int(headers["X-Acti-Timestamp"]) + 301
    with pytest.raises(DeliveryError, match="more than 300 s: a replay"):
        verify_delivery(SECRET, headers, body, now=later)
