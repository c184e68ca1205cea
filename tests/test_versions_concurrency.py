"""Versions under many processes, on both engines: per-version run statistics stay exact under
8 processes x 250 runs spread over 3 versions, and of two processes moving one label expecting
the same position, exactly one wins and the label log holds one move (``workers.versions``)."""

from __future__ import annotations

from workers import versions


def test_version_stats_are_exact_under_eight_processes(store_url: str) -> None:
    assert versions.version_stats_storm(store_url, processes=8, calls=250) == []


def test_two_processes_moving_one_label_exactly_one_wins(store_url: str) -> None:
    assert versions.label_race(store_url, rounds=10) == []
