"""``acti-store relay``: deliver the change feed to a webhook, in order, at least once.

Each change is POSTed as its JSON body (``change_body``), signed with the secret from
``--secret-env`` in the format of ``acti_store.relay_signature`` (the signature covers the
delivery's id ``<tenant>:<seq>``, its tenant, the time it is sent and the body; each try is
signed anew). One change at a time: a 2xx answer delivers it, and the relay's position
(``repo.save_checkpoint(--name, seq)``) moves past it only then, so a relay stopped at any
moment (even by ``kill -9``) delivers again, on its next start, at most the change it was at.
A receiver drops a delivery it handled already (``relay_signature.DeliveryReceiver``).

A delivery has one deadline for the whole exchange (``--timeout``, 30 s: connecting, sending,
the receiver's whole answer): a receiver that trickles its answer is cut off then. A failure
that can pass (no connection, the deadline, 5xx, 408, 429) is tried again, the same change,
after a growing pause (``Backoff``), forever, with one line per failure on stderr. Any other
answer (4xx, a redirect) is the receiver refusing the change: the relay stops with status 1 and
delivers nothing after it. Ctrl-C or SIGTERM end it with status 0.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.client
import os
import random
import socket
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Final

from ..changes import Change
from ..errors import StoreUnavailableError
from ..models import NAME_RULE, is_valid_name
from ..relay_signature import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    SIGNATURE_VERSION,
    TENANT_HEADER,
    TIMESTAMP_HEADER,
    signed_headers,
)
from ..repository import AgentRepository
from .feed import (
    change_body,
    change_line,
    close_quietly,
    read_feed,
    seq_number,
    until_stopped,
)
from .options import CommandFailed, add_url_option, open_from_args, package_version

#: How long one delivery may take in all (connecting, sending, the receiver's whole answer),
#: in seconds, unless ``--timeout`` says otherwise.
DELIVERY_TIMEOUT: Final = 30.0
#: The shortest ``--timeout`` taken, in seconds.
DELIVERY_TIMEOUT_MIN: Final = 0.1
#: The pause after the first failure, doubled after each next one up to ``BACKOFF_MAX`` (seconds).
BACKOFF_FIRST: Final = 0.1
BACKOFF_MAX: Final = 10.0
#: The longest ``Retry-After`` (seconds) a receiver's 429 or 503 is obeyed for.
RETRY_AFTER_MAX: Final = 600.0
#: Answers that say "try again later"; every other non-2xx status is a refusal.
RETRYABLE_STATUSES: Final = frozenset({408, 429})

NO_SECRET: Final = (
    "the environment variable {name} is {state}: set it to the webhook's secret (the relay "
    "signs every body with it)"
)
REFUSED: Final = (
    "the webhook refused change {seq} with {answer}: nothing after it was "
    "delivered (fix the receiver, then start the relay again: it resumes at change {seq})"
)
RETRYING: Final = "warning: change {seq} not delivered ({problem}); trying again in {pause:.2f} s"
OVERDUE: Final = "no whole answer within {timeout:g} s"
STORE_RETRYING: Final = (
    "warning: change {seq} was delivered, but its position could not be saved ({problem}); "
    "trying again in {pause:.2f} s"
)


def _answer(status: int, reason: str | None) -> str:
    """``HTTP 503 Service Unavailable``: a receiver's answer as the relay's lines name it."""
    return f"HTTP {status} {reason or ''}".rstrip()


class Refused(Exception):
    """The receiver answered with a status that says it will not take the change."""

    def __init__(self, status: int, reason: str | None) -> None:
        super().__init__(_answer(status, reason))


class Undelivered(Exception):
    """The delivery failed in a way that can pass: the same change is tried again.

    ``retry_after``: the pause the receiver asked for (``Retry-After``), if any.
    """

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a delivery: urllib would resend a POST as a GET, bodiless."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Deadline:
    """One delivery's deadline, ``seconds`` from when the block starts: the connections opened
    for it are shut when it passes, whatever they wait on (a per-read timeout does not end an
    answer trickled a byte at a time). ``passed`` then says so."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._at = time.monotonic() + seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self.passed = False

    def __enter__(self) -> Deadline:
        self._at = time.monotonic() + self._seconds
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def remaining(self) -> float:
        """The seconds left (a little at least: a timeout of 0 would make a socket non-blocking)."""
        return max(self._at - time.monotonic(), 0.001)

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` when the deadline passes (at once if it has)."""
        with self._lock:
            self._sockets.append(sock)
            if self.passed:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.passed = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    """Shut both ways: a thread blocked on the socket wakes (the socket's own ``shutdown``, not
    TLS's, which another thread's read could trip over)."""
    with contextlib.suppress(OSError):  # closed already
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Watched:
    """A connection (mixed into ``http.client``'s) that connects within its request's deadline
    and is then watched by it."""

    sock: socket.socket | None
    timeout: float | None

    def __init__(self, *args: Any, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self) -> None:
        self.timeout = self._deadline.remaining()
        super().connect()  # type: ignore[misc]
        if self.sock is not None:
            self._deadline.watch(self.sock)


class _WatchedHTTP(_Watched, http.client.HTTPConnection):
    pass


class _WatchedHTTPS(_Watched, http.client.HTTPSConnection):
    pass


class _Delivery(urllib.request.Request):
    """A delivery's request: it carries its ``Deadline`` to the connection that sends it."""

    def __init__(self, *args: Any, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadline = deadline


def _deadline_of(request: urllib.request.Request) -> Deadline:
    if not isinstance(request, _Delivery):  # pragma: no cover - only deliveries are opened
        raise TypeError("the relay's opener sends deliveries only")
    return request.deadline


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = functools.partial(_WatchedHTTP, deadline=_deadline_of(req))
        return self.do_open(connection, req)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The system's trusted certificates, loaded at the first https:// delivery (30 ms: not on
    every start of the command line)."""
    return ssl.create_default_context()


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = functools.partial(_WatchedHTTPS, deadline=_deadline_of(req))
        return self.do_open(connection, req, context=_tls_context())


#: What posts the deliveries: urllib's, following no redirect, each within its deadline.
_OPENER: Final = urllib.request.build_opener(_NoRedirects, _HTTPHandler, _HTTPSHandler)
#: How much of an answer's body is read at a time (and dropped: the status is the answer).
_CHUNK: Final = 64 * 1024


@dataclass(frozen=True)
class Webhook:
    """The receiver at ``url``, whose deliveries are signed with ``secret``."""

    url: str
    secret: bytes
    timeout: float = DELIVERY_TIMEOUT
    user_agent: str = field(default_factory=lambda: f"acti-store-relay/{package_version()}")

    def post(self, change: Change) -> None:
        """Deliver ``change``: return on a 2xx answer; raise ``Undelivered`` (try again) or
        ``Refused`` (do not)."""
        with Deadline(self.timeout) as deadline:
            try:
                self._exchange(change, deadline)
            except Undelivered:
                if not deadline.passed:
                    raise
            if deadline.passed:  # whatever was read: the answer was cut off
                raise Undelivered(OVERDUE.format(timeout=self.timeout))

    def _exchange(self, change: Change, deadline: Deadline) -> None:
        """One POST of ``change``, its connection shut by ``deadline`` if it passes."""
        body = change_body(change)
        request = _Delivery(
            self.url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                **signed_headers(self.secret, change.tenant, change.seq, body, time.time()),
                "User-Agent": self.user_agent,
            },
            deadline=deadline,
        )
        try:
            with _OPENER.open(request, timeout=deadline.remaining()) as response:
                while response.read(_CHUNK):  # the whole answer: the connection ends cleanly
                    pass
        except urllib.error.HTTPError as exc:  # an answer, not 2xx
            exc.close()
            if exc.code >= 500 or exc.code in RETRYABLE_STATUSES:
                pause = _retry_after(exc.headers.get("Retry-After"))
                raise Undelivered(_answer(exc.code, exc.reason), pause) from None
            raise Refused(exc.code, exc.reason) from None
        except urllib.error.URLError as exc:  # no answer: the connection
            raise Undelivered(str(exc.reason)) from None
        except (OSError, http.client.HTTPException) as exc:  # dropped, timed out, garbled
            raise Undelivered(f"{type(exc).__name__}: {exc}".rstrip(": ")) from None


def _retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` in seconds (its date form is ignored), at most ``RETRY_AFTER_MAX``."""
    try:
        return min(float(value), RETRY_AFTER_MAX) if value else None
    except ValueError:
        return None


class Backoff:
    """Pauses between tries: ``BACKOFF_FIRST`` doubling up to ``BACKOFF_MAX``, each drawn from
    the upper half of its step (jitter: relays that failed together do not retry together)."""

    def __init__(self) -> None:
        self._step = BACKOFF_FIRST

    def pause(self, at_least: float | None = None) -> float:
        """The next pause, ``at_least`` long if given; the following one will be longer."""
        pause = random.uniform(self._step / 2, self._step)
        self._step = min(self._step * 2, BACKOFF_MAX)
        return max(pause, at_least or 0.0)

    def reset(self) -> None:
        self._step = BACKOFF_FIRST


def deliver(webhook: Webhook, change: Change, backoff: Backoff) -> None:
    """Post ``change`` until it is delivered; raise ``CommandFailed`` if the receiver refuses."""
    while True:
        try:
            webhook.post(change)
        except Undelivered as exc:
            pause = backoff.pause(exc.retry_after)
            print(RETRYING.format(seq=change.seq, problem=exc, pause=pause), file=sys.stderr)
            time.sleep(pause)
            continue
        except Refused as exc:
            raise CommandFailed(REFUSED.format(seq=change.seq, answer=exc)) from None
        backoff.reset()
        return


def save_position(repo: AgentRepository, name: str, seq: int, backoff: Backoff) -> None:
    """Save the relay's position, trying again while the store is unavailable for a while."""
    while True:
        try:
            repo.save_checkpoint(name, seq)
        except StoreUnavailableError as exc:
            if not exc.transient:
                raise
            pause = backoff.pause()
            print(STORE_RETRYING.format(seq=seq, problem=exc, pause=pause), file=sys.stderr)
            time.sleep(pause)
            continue
        backoff.reset()
        return


def _secret(name: str) -> bytes:
    value = os.environ.get(name)
    if not value:
        state = "not set" if value is None else "empty"
        raise CommandFailed(NO_SECRET.format(name=name, state=state))
    return value.encode()


def _relay(args: argparse.Namespace) -> int:
    # Refused before the store opens.
    webhook = Webhook(args.webhook, _secret(args.secret_env), timeout=args.timeout)
    repo = open_from_args(args)
    feed = None
    backoff = Backoff()
    try:
        start = args.after if args.after is not None else repo.checkpoint(args.name)
        feed = read_feed(repo, start, follow=True)
        for change in feed:
            deliver(webhook, change, backoff)
            save_position(repo, args.name, change.seq, backoff)
            print(change_line(change), flush=True)
    finally:
        close_quietly(repo, feed)
    return 0  # pragma: no cover - the feed is followed without end


def webhook_url(text: str) -> str:
    """An argparse ``type``: an ``http://`` or ``https://`` URL with a host."""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"not an http:// or https:// URL: {text!r}")
    return text


def deadline_seconds(text: str) -> float:
    """An argparse ``type``: a delivery's deadline, a finite number of seconds, at least
    ``DELIVERY_TIMEOUT_MIN``."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not DELIVERY_TIMEOUT_MIN <= value < float("inf"):
        raise argparse.ArgumentTypeError(
            f"not a number of seconds, at least {DELIVERY_TIMEOUT_MIN:g}: {text!r}"
        )
    return value


def relay_name(text: str) -> str:
    """An argparse ``type``: the relay's name, under which its position is saved."""
    if not is_valid_name(text):
        raise argparse.ArgumentTypeError(NAME_RULE)
    return text


def register(subparsers: Any) -> None:
    """Add ``relay`` to the command line."""
    relay = subparsers.add_parser(
        "relay",
        help="deliver each change to a webhook (signed POSTs), in order, at least once",
        description="Follow the change feed and POST each change, as JSON, to the webhook, one "
        f"at a time, in order, numbered ({DELIVERY_HEADER}: <tenant>:<seq>, {TENANT_HEADER}, "
        f"{TIMESTAMP_HEADER}: <unix seconds>) and signed ({SIGNATURE_HEADER}: "
        f"{SIGNATURE_VERSION}=<hex HMAC-SHA256 of the version, the delivery id, the tenant, the "
        "timestamp and the body>; a receiver checks it with acti_store.relay_signature). The "
        "position is saved in the store under "
        "--name after each 2xx answer; a relay started again resumes there. Connection errors, "
        "a delivery past --timeout, 5xx, 408 and 429 are tried again, with growing pauses, "
        "forever; any other answer stops the relay (status 1). Prints each delivered change on "
        "stdout; Ctrl-C or SIGTERM end it (status 0).",
    )
    relay.add_argument(
        "--webhook", required=True, type=webhook_url, metavar="URL", help="the receiver's URL"
    )
    relay.add_argument(
        "--secret-env",
        required=True,
        metavar="NAME",
        help="the environment variable that holds the signing secret (not the secret itself: "
        "command lines are visible to other users)",
    )
    relay.add_argument(
        "--name",
        required=True,
        type=relay_name,
        metavar="RELAY",
        help="the relay's name, under which its position is saved (snake_case)",
    )
    relay.add_argument(
        "--after",
        type=seq_number,
        default=None,
        metavar="SEQ",
        help="start after seq SEQ (default: after the saved position, else from the oldest "
        "change kept)",
    )
    relay.add_argument(
        "--timeout",
        type=deadline_seconds,
        default=DELIVERY_TIMEOUT,
        metavar="SECONDS",
        help="the most one delivery may take in all, connecting, sending and the receiver's "
        f"whole answer, then it is tried again: at least {DELIVERY_TIMEOUT_MIN:g} (default: "
        f"{DELIVERY_TIMEOUT:g})",
    )
    add_url_option(relay)
    relay.set_defaults(func=until_stopped(_relay))
