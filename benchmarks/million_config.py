"""What ``benchmarks.million`` is given: apart from it, so that its report
(``benchmarks.million_report``) reads it without importing the run that imports the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .run_config import DEFAULT_SEED

DEFAULT_SIZES: Final = (100_000, 1_000_000)
GETS: Final = 2_000
RECORDS: Final = 2_000
SEARCHES_PER_KIND: Final = 20


@dataclass(frozen=True)
class MillionConfig:
    sizes: tuple[int, ...] = DEFAULT_SIZES
    postgres_url: str | None = None
    out: Path = Path("benchmarks/results")
    name: str = "million"
    workdir: Path | None = None
    seed: int = DEFAULT_SEED
    chart: bool = True
    gets: int = GETS
    records: int = RECORDS
    searches_per_kind: int = SEARCHES_PER_KIND
    #: Export/import in this process instead of a subprocess each (smoke tests: no memory figure).
    inline_io: bool = False
