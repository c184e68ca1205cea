"""Routing by label: weighted splits, sticky resolution, and the figures that compare versions.

Pure Python, like ``versioning``. A label points at one version or splits its traffic over
several (``Weights``: version -> whole percent, summing to 100). ``pick`` sends a key to one
of them by a hash of agent, label and key, so a key keeps its version while the split stands,
and when the weights change only the keys whose share moved change version. ``wilson`` and
``difference_interval`` give the 95 % intervals of ``compare_versions``.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping
from typing import Final

from .errors import ArgumentTypeError, InvalidInputError
from .models import COUNTER_MAX
from .validation import ARGUMENT, quoted
from .versioning import GateCheck, LabelGate, VersionComparison, VersionFigures

#: A label's target: version number -> share in whole percent, summing to 100.
Weights = dict[int, int]

TOTAL: Final = 100
#: Most versions one label can split over.
SPLIT_MAX: Final = 10
#: Longest spelled split (``spelled``): ten versions of up to 19 digits, each ``=100 ``.
WEIGHTS_MAX_LENGTH: Final = 250
#: Longest routing key (a user id, a session id...).
KEY_MAX_LENGTH: Final = 200
#: z for a two-sided 95 % interval.
Z95: Final = 1.959963984540054
WEIGHTS_RULE: Final = (
    f"a version number, or up to {SPLIT_MAX} versions with whole-percent weights summing to "
    f"{TOTAL} (e.g. {{3: 90, 4: 10}})"
)


def plain(version: int) -> Weights:
    return {version: TOTAL}


def main_version(weights: Mapping[int, int]) -> int:
    """The version a split label stands for where one version is wanted (``labels()``,
    ``get_version(label=...)``): the largest share, the older version on a tie."""
    return min(weights, key=lambda version: (-weights[version], version))


def is_split(weights: Mapping[int, int]) -> bool:
    return len(weights) > 1


def checked_weights(value: object, field: str = "version") -> Weights:
    """A target as ``set_label`` takes it (an ``int``, or a mapping of versions to weights) as
    ``Weights`` in version order; zero weights are dropped. Else ``InvalidInputError``
    (``ArgumentTypeError`` for another type)."""
    if type(value) is int:
        if 1 <= value <= COUNTER_MAX:
            return plain(value)
        raise InvalidInputError(ARGUMENT, [(field, f"must be {WEIGHTS_RULE}, not {value}")])
    if not isinstance(value, Mapping) or not value:
        if isinstance(value, Mapping):
            raise InvalidInputError(ARGUMENT, [(field, f"must be {WEIGHTS_RULE}, not {{}}")])
        raise ArgumentTypeError(ARGUMENT, [(field, f"must be {WEIGHTS_RULE}, not {quoted(value)}")])
    weights: Weights = {}
    for version, weight in value.items():
        for part in (version, weight):
            if type(part) is not int:
                raise ArgumentTypeError(
                    ARGUMENT, [(field, f"must be {WEIGHTS_RULE}; {quoted(part)} is not an int")]
                )
        if not 1 <= version <= COUNTER_MAX or not 0 <= weight <= TOTAL:
            raise InvalidInputError(
                ARGUMENT,
                [(field, f"must be {WEIGHTS_RULE}; {version}: {weight} is out of range")],
            )
        if weight:
            weights[version] = weight
    if sum(weights.values()) != TOTAL or len(weights) > SPLIT_MAX:
        raise InvalidInputError(
            ARGUMENT,
            [(field, f"must be {WEIGHTS_RULE}; these sum to {sum(weights.values())}")]
            if sum(weights.values()) != TOTAL
            else [(field, f"must be {WEIGHTS_RULE}; {len(weights)} versions is too many")],
        )
    return dict(sorted(weights.items()))


def checked_key(value: object, field: str = "key") -> str | None:
    """None, or a routing key: text of 1 to ``KEY_MAX_LENGTH`` characters."""
    if value is None or (type(value) is str and 0 < len(value) <= KEY_MAX_LENGTH):
        return value
    rule = f"text of 1 to {KEY_MAX_LENGTH} characters"
    if not isinstance(value, str):
        raise ArgumentTypeError(ARGUMENT, [(field, f"must be {rule}, not {quoted(value)}")])
    raise InvalidInputError(ARGUMENT, [(field, f"must be {rule}")])


def describe(weights: Mapping[int, int]) -> str:
    """``version 3``, or ``3: 90 %, 4: 10 %`` for a split."""
    if not is_split(weights):
        return f"version {next(iter(weights))}"
    return ", ".join(f"{version}: {weight} %" for version, weight in weights.items())


def spelled(weights: Mapping[int, int]) -> str:
    """The target as the CLI takes it: ``3`` or ``3=90 4=10``."""
    if not is_split(weights):
        return str(next(iter(weights)))
    return " ".join(f"{version}={weight}" for version, weight in weights.items())


def point(agent: str, label: str, key: str) -> float:
    """Where ``key`` falls in [0, 100): a keyed BLAKE2b hash of agent, label and key, the same
    in every process and Python version (unlike ``hash``)."""
    digest = hashlib.blake2b(
        "\x00".join((agent, label, key)).encode(), digest_size=8, person=b"acti-route"
    ).digest()
    return int.from_bytes(digest, "big") / 2**64 * TOTAL


def pick(weights: Mapping[int, int], agent: str, label: str, key: str | None) -> int:
    """The version ``key`` goes to: versions own consecutive ranges of [0, 100) in version
    order, as wide as their weights, and the key's ``point`` falls in one. Moving 10 points
    from one version to its neighbour moves exactly the keys in those 10 points. Without a key,
    a random draw by weight."""
    at = random.random() * TOTAL if key is None else point(agent, label, key)
    edge = 0
    for version, weight in weights.items():
        edge += weight
        if at < edge:
            return version
    return next(reversed(weights))  # at == 100 cannot happen; float rounding, to be safe


def wilson(successes: int, runs: int) -> tuple[float, float]:
    """The Wilson score 95 % interval of a success rate (``(0.0, 1.0)`` without runs)."""
    if runs == 0:
        return (0.0, 1.0)
    rate = successes / runs
    z2 = Z95 * Z95
    centre = (rate + z2 / (2 * runs)) / (1 + z2 / runs)
    half = Z95 * math.sqrt(rate * (1 - rate) / runs + z2 / (4 * runs * runs)) / (1 + z2 / runs)
    return (max(0.0, centre - half), min(1.0, centre + half))


def difference_interval(a: tuple[int, int], b: tuple[int, int]) -> tuple[float, float]:
    """The 95 % interval of b's success rate minus a's, each ``(successes, runs)``:
    Newcombe's hybrid score interval (his method 10), built from the two Wilson intervals."""
    rate_a, rate_b = (s / n if n else 0.0 for s, n in (a, b))
    low_a, high_a = wilson(*a)
    low_b, high_b = wilson(*b)
    difference = rate_b - rate_a
    low = difference - math.sqrt((rate_b - low_b) ** 2 + (high_a - rate_a) ** 2)
    high = difference + math.sqrt((high_b - rate_b) ** 2 + (rate_a - low_a) ** 2)
    return (max(-1.0, low), min(1.0, high))


def figures(version: int, runs: int, successes: int, duration_total: float) -> VersionFigures:
    """One version's figures from its lifetime counters."""
    return VersionFigures(
        version=version,
        runs=runs,
        successes=successes,
        success_rate=successes / runs if runs else None,
        interval=wilson(successes, runs),
        mean_duration=duration_total / runs if runs else None,
    )


def comparison(name: str, a: VersionFigures, b: VersionFigures) -> VersionComparison:
    """``b`` against ``a``: the difference of their success rates and its 95 % interval."""
    both = a.success_rate is not None and b.success_rate is not None
    return VersionComparison(
        name=name,
        a=a,
        b=b,
        difference=(b.success_rate or 0.0) - (a.success_rate or 0.0) if both else None,
        difference_interval=(
            difference_interval((a.successes, a.runs), (b.successes, b.runs)) if both else None
        ),
    )


def gate_check(gate: LabelGate, version: VersionFigures) -> GateCheck:
    """``version`` held against ``gate``: what it has where the gate wants more, in words
    (``version 4 has`` + each)."""
    failures: list[str] = []
    runs, rate, mean = version.runs, version.success_rate, version.mean_duration
    if runs < gate.min_runs:
        failures.append(f"{runs} run{'s' if runs != 1 else ''} (at least {gate.min_runs} wanted)")
    if gate.min_success_rate > 0 and (rate is None or rate < gate.min_success_rate):
        has = "no success rate yet" if rate is None else f"a success rate of {rate:.1%}"
        failures.append(f"{has} (at least {gate.min_success_rate:.1%} wanted)")
    limit = gate.max_mean_duration
    if limit is not None and (mean is None or mean > limit):
        has = "no duration yet" if mean is None else f"a mean duration of {mean:.2f} s"
        failures.append(f"{has} (at most {limit:g} s wanted)")
    return GateCheck(
        version=version.version,
        runs=runs,
        successes=version.successes,
        mean_duration=mean,
        failures=failures,
    )
