"""``acti_store.relay_signature``: a relay's delivery is signed with its id, its tenant and the
time it was sent, and the documented receiver refuses it altered, stale, or handled already.

Deliveries are made with the relay's own signing (``signed_headers``) at a clock the test
chooses; the end-to-end runs (a real relay, a real receiver) are in ``test_relay.py``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest

from acti_store import AgentStoreError
from acti_store.relay_signature import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    TENANT_HEADER,
    TIMESTAMP_HEADER,
    TOLERANCE,
    DeliveryError,
    DeliveryReceiver,
    RepeatedDeliveryError,
    signed_headers,
    verify_delivery,
)

SECRET = b"s3cret: the relay's signing key"
NOW = 1_800_000_000.0


def delivery(
    seq: int, tenant: str = "acme", at: float = NOW, kind: str = "updated"
) -> tuple[dict[str, str], bytes]:
    """A change's delivery as the relay sends it at ``at``: its headers and body."""
    change: dict[str, Any] = {
        "seq": seq,
        "kind": kind,
        "agent": "support_bot",
        "version": seq + 1,
        "label": None,
        "at": "2027-01-15T08:00:00+00:00",
        "tenant": tenant,
    }
    body = json.dumps(change, separators=(",", ":")).encode()
    return {
        "Content-Type": "application/json",
        **signed_headers(SECRET, tenant, seq, body, at),
    }, body


def test_a_delivery_names_its_tenant_and_its_id_is_unique_per_store() -> None:
    acme, _ = delivery(7, "acme")
    globex, _ = delivery(7, "globex")
    assert (acme[DELIVERY_HEADER], acme[TENANT_HEADER]) == ("acme:7", "acme")
    assert (globex[DELIVERY_HEADER], globex[TENANT_HEADER]) == ("globex:7", "globex")
    assert acme[TIMESTAMP_HEADER] == str(int(NOW))
    assert acme[SIGNATURE_HEADER].startswith("v1=")


def test_the_signature_covers_the_id_the_tenant_the_time_and_the_body() -> None:
    headers, body = delivery(7)
    verified = verify_delivery(SECRET, headers, body, now=NOW)
    assert (verified.id, verified.tenant, verified.seq) == ("acme:7", "acme", 7)
    assert verified.change == json.loads(body)
    altered = [
        ({**headers, DELIVERY_HEADER: "acme:9"}, body),  # the probe's replay under a higher id
        ({**headers, TENANT_HEADER: "globex"}, body),
        ({**headers, TIMESTAMP_HEADER: str(int(NOW) + 60)}, body),  # re-dated
        (headers, body.replace(b'"updated"', b'"deleted"')),
        ({**headers, SIGNATURE_HEADER: headers[SIGNATURE_HEADER][:-1] + "0"}, body),
    ]
    for changed_headers, changed_body in altered:
        with pytest.raises(DeliveryError, match="signature does not match"):
            verify_delivery(SECRET, changed_headers, changed_body, now=NOW)
    with pytest.raises(DeliveryError, match="signature does not match"):
        verify_delivery(b"another secret", headers, body, now=NOW)


def test_a_body_only_signature_of_the_old_format_is_refused_by_its_version() -> None:
    headers, body = delivery(7)
    old = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    with pytest.raises(DeliveryError, match="not of format v1"):
        verify_delivery(SECRET, {**headers, SIGNATURE_HEADER: old}, body, now=NOW)


def test_a_header_and_body_that_disagree_are_refused_even_signed() -> None:
    headers, body = delivery(7, "acme")
    other_body = body.replace(b'"seq":7', b'"seq":8')
    signed = signed_headers(SECRET, "acme", 7, other_body, NOW)
    with pytest.raises(DeliveryError, match="not a change of tenant acme numbered 8"):
        verify_delivery(SECRET, {**headers, **signed}, other_body, now=NOW)


@pytest.mark.parametrize(
    ("received_after", "taken"),
    [(0, True), (TOLERANCE - 1, True), (TOLERANCE + 1, False), (-(TOLERANCE + 1), False)],
    ids=["at-once", "within", "stale", "from-the-future"],
)
def test_a_delivery_older_than_five_minutes_is_stale(received_after: float, taken: bool) -> None:
    headers, body = delivery(7)
    if taken:
        assert verify_delivery(SECRET, headers, body, now=NOW + received_after).seq == 7
        return
    with pytest.raises(DeliveryError, match="more than 300 s: a replay"):
        verify_delivery(SECRET, headers, body, now=NOW + received_after)


def test_the_receiver_refuses_a_delivery_it_handled_and_takes_one_it_did_not() -> None:
    clock = [NOW]
    receiver = DeliveryReceiver(SECRET, clock=lambda: clock[0])
    handled: list[str] = []
    first = delivery(1)
    with receiver.receive(*first) as one:
        handled.append(one.id)
    with (
        pytest.raises(RepeatedDeliveryError, match="acme:1 was handled already"),
        receiver.receive(*first),
    ):
        handled.append("again")
    # The relay's next try of a change the receiver failed to handle is taken.
    with pytest.raises(RuntimeError), receiver.receive(*delivery(2)):
        raise RuntimeError("the receiver's database is down")
    clock[0] += 30
    retry = delivery(2, at=clock[0])  # each try is signed anew, at its own time
    with receiver.receive(*retry) as two:
        handled.append(two.id)
    # A copy of delivery 1 re-sent later, as the relay does after a crash: a repeat still.
    clock[0] += 3600
    with pytest.raises(RepeatedDeliveryError), receiver.receive(*delivery(1, at=clock[0])):
        handled.append("again")
    assert handled == ["acme:1", "acme:2"]
    assert receiver.handled == {"acme": 2}


def test_one_receiver_takes_two_tenants_changes_with_the_same_seq() -> None:
    receiver = DeliveryReceiver(SECRET, clock=lambda: NOW)
    handled = []
    for tenant in ("acme", "globex"):
        for seq in (1, 2):
            with receiver.receive(*delivery(seq, tenant)) as one:
                handled.append(one.id)
    assert handled == ["acme:1", "acme:2", "globex:1", "globex:2"]


def test_a_delivery_being_handled_is_not_taken_twice_at_once() -> None:
    receiver = DeliveryReceiver(SECRET, clock=lambda: NOW)
    copy = delivery(1)
    with receiver.receive(*copy), pytest.raises(RepeatedDeliveryError), receiver.receive(*copy):
        pass


def test_headers_are_found_in_any_case_and_their_absence_is_named() -> None:
    headers, body = delivery(3)
    lower = {name.lower(): value for name, value in headers.items()}
    assert verify_delivery(SECRET.decode(), lower, body, now=NOW).id == "acme:3"
    del lower[TIMESTAMP_HEADER.lower()]
    with pytest.raises(DeliveryError, match="no X-Acti-Timestamp header") as refused:
        verify_delivery(SECRET, lower, body, now=NOW)
    assert isinstance(refused.value, AgentStoreError) and isinstance(refused.value, ValueError)
