"""The relay's signed deliveries: how ``acti-store relay`` signs a change, and how a receiver
checks one (``verify_delivery``, ``DeliveryReceiver``).

Format ``v1``. Each delivery is a POST whose body is the change as JSON, with the headers:

- ``X-Acti-Delivery: <tenant>:<seq>``: the delivery's id, unique per store (each tenant's feed
  is numbered from 1, so the seq alone is not);
- ``X-Acti-Tenant: <tenant>``: the tenant whose change it is;
- ``X-Acti-Timestamp: <unix seconds>``: when the relay sent it (each try is signed anew);
- ``X-Acti-Signature: v1=<hex>``: the HMAC-SHA256, keyed with the relay's secret, of
  ``v1`` + LF + delivery id + LF + tenant + LF + timestamp + LF + the exact body bytes.

The version leads the signature, so a receiver tells the formats apart (the body-only
``sha256=<hex>`` of earlier relays is refused: a captured body could be replayed under any id).
A receiver refuses a bad signature, a delivery dated more than ``TOLERANCE`` seconds from its
own clock (a captured request is good for that long only), and answers a delivery it already
handled without handling it again (``DeliveryReceiver``: a relay delivers each tenant's changes
in order, at least once).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from .errors import AgentStoreError

#: The signature format's version, written before the signature: ``v1=<hex>``.
SIGNATURE_VERSION: Final = "v1"
SIGNATURE_HEADER: Final = "X-Acti-Signature"
DELIVERY_HEADER: Final = "X-Acti-Delivery"
TENANT_HEADER: Final = "X-Acti-Tenant"
TIMESTAMP_HEADER: Final = "X-Acti-Timestamp"
#: How far (seconds) a delivery's timestamp may be from the receiver's clock: 5 minutes.
TOLERANCE: Final = 300.0

MISSING: Final = "the delivery has no {header} header"
UNKNOWN_VERSION: Final = (
    "the signature is not of format {version} ({header}: {version}=<hex>): an older relay's, "
    "or not a relay's"
)
BAD_SIGNATURE: Final = "the signature does not match (another secret, or an altered delivery)"
BAD_TIMESTAMP: Final = "{header} is not a whole number of seconds"
STALE: Final = (
    "the delivery is dated {age:.0f} s from this clock, more than {tolerance:.0f} s: a replay, "
    "or a clock to set right"
)
BAD_BODY: Final = "the signed body is not a change of tenant {tenant} numbered {seq}"
REPEATED: Final = "delivery {id} was handled already (or is being handled)"


class DeliveryError(AgentStoreError, ValueError):
    """A delivery a receiver must not handle: not a relay's, altered, or stale."""


class RepeatedDeliveryError(DeliveryError):
    """A delivery handled already: answer 2xx (the relay sends a change again after a crash)
    and do not handle it again."""


def delivery_id(tenant: str, seq: int) -> str:
    """``acme:17``: a delivery's id, unique per store."""
    return f"{tenant}:{seq}"


def sign(secret: bytes, *, delivery: str, tenant: str, timestamp: int, body: bytes) -> str:
    """The ``X-Acti-Signature`` value of a delivery: ``v1=`` and the hex HMAC-SHA256."""
    signed = f"{SIGNATURE_VERSION}\n{delivery}\n{tenant}\n{timestamp}\n".encode() + body
    return f"{SIGNATURE_VERSION}=" + hmac.new(secret, signed, hashlib.sha256).hexdigest()


def signed_headers(secret: bytes, tenant: str, seq: int, body: bytes, now: float) -> dict[str, str]:
    """The headers of a delivery of change ``seq`` of ``tenant`` (``body``) sent at ``now``."""
    delivery, timestamp = delivery_id(tenant, seq), int(now)
    return {
        DELIVERY_HEADER: delivery,
        TENANT_HEADER: tenant,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(
            secret, delivery=delivery, tenant=tenant, timestamp=timestamp, body=body
        ),
    }


@dataclass(frozen=True)
class Delivery:
    """A verified delivery: its ``id``, the ``tenant`` and ``seq`` of its change, when it was
    sent (``timestamp``, unix seconds) and the ``change`` (the body, as JSON)."""

    id: str
    tenant: str
    seq: int
    timestamp: int
    change: dict[str, Any]


def _header(headers: Mapping[str, str], name: str) -> str:
    """The header ``name`` whatever the case of ``headers``' keys; ``DeliveryError`` without."""
    value = headers.get(name)
    if value is None:
        folded = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == folded), None)
    if value is None:
        raise DeliveryError(MISSING.format(header=name))
    return value


def _key(secret: bytes | str) -> bytes:
    return secret.encode() if isinstance(secret, str) else secret


def verify_delivery(
    secret: bytes | str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance: float = TOLERANCE,
    now: float | None = None,
) -> Delivery:
    """The delivery of ``body`` with ``headers`` (the raw body bytes, as received), once its
    signature holds and it is dated within ``tolerance`` seconds of ``now`` (default: this
    clock); else ``DeliveryError`` saying why. Does not know what was handled already: a
    receiver keeps that (``DeliveryReceiver``)."""
    delivery, tenant = _header(headers, DELIVERY_HEADER), _header(headers, TENANT_HEADER)
    stamp, given = _header(headers, TIMESTAMP_HEADER), _header(headers, SIGNATURE_HEADER)
    if not given.startswith(f"{SIGNATURE_VERSION}="):
        raise DeliveryError(
            UNKNOWN_VERSION.format(version=SIGNATURE_VERSION, header=SIGNATURE_HEADER)
        )
    if not stamp.isascii() or not stamp.isdigit():
        raise DeliveryError(BAD_TIMESTAMP.format(header=TIMESTAMP_HEADER))
    timestamp = int(stamp)
    expected = sign(_key(secret), delivery=delivery, tenant=tenant, timestamp=timestamp, body=body)
    if not hmac.compare_digest(expected.encode(), given.encode()):
        raise DeliveryError(BAD_SIGNATURE)
    age = abs((time.time() if now is None else now) - timestamp)
    if age > tolerance:
        raise DeliveryError(STALE.format(age=age, tolerance=tolerance))
    try:
        change = json.loads(body)
    except ValueError:  # not UTF-8, not JSON: signed with the secret, yet not a relay's
        change = None
    seq = change.get("seq") if isinstance(change, dict) else None
    if (
        not isinstance(change, dict)
        or not isinstance(seq, int)
        or change.get("tenant") != tenant
        or delivery != delivery_id(tenant, seq)
    ):
        raise DeliveryError(BAD_BODY.format(tenant=tenant, seq=seq))
    return Delivery(delivery, tenant, seq, timestamp, change)


class DeliveryReceiver:
    """A webhook receiver's check of each delivery: ``verify_delivery``, then refusal of a
    delivery handled already or being handled.

    ``handled`` maps each tenant to the newest seq handled (a dict by default; give a mapping
    kept in your own store to remember across restarts). A relay delivers a tenant's changes in
    order, so a seq at or below it is a repeat. ``clock``: unix seconds (``time.time``).
    """

    def __init__(
        self,
        secret: bytes | str,
        *,
        tolerance: float = TOLERANCE,
        handled: MutableMapping[str, int] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = _key(secret)
        self._tolerance = tolerance
        self._clock = clock
        self.handled: MutableMapping[str, int] = {} if handled is None else handled
        self._busy: set[str] = set()
        self._lock = threading.Lock()

    @contextmanager
    def receive(self, headers: Mapping[str, str], body: bytes) -> Iterator[Delivery]:
        """The verified delivery, to handle inside the block. The block ending normally marks
        it handled; an exception leaves it unhandled (the relay's next try is taken).

        Raises ``RepeatedDeliveryError`` (answer 2xx) or another ``DeliveryError`` (answer
        4xx: the relay stops and says so) before the block runs."""
        delivery = verify_delivery(
            self._secret, headers, body, tolerance=self._tolerance, now=self._clock()
        )
        with self._lock:
            if delivery.seq <= self.handled.get(delivery.tenant, 0) or delivery.id in self._busy:
                raise RepeatedDeliveryError(REPEATED.format(id=delivery.id))
            self._busy.add(delivery.id)
        try:
            yield delivery
            with self._lock:
                newest = self.handled.get(delivery.tenant, 0)
                self.handled[delivery.tenant] = max(newest, delivery.seq)
        finally:
            with self._lock:
                self._busy.discard(delivery.id)
