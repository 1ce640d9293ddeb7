"""The start line tells a host's group from its first line, white space in names included, and
no other line (or a group the job does not have) does."""

from __future__ import annotations

from hetero_constructs.runs.logs import HostGroups
from hetero_constructs.runtime.metrics import interval_line, start_line


def test_the_start_line_places_its_host_at_once() -> None:
    groups = HostGroups({"data loaders": 2, "gpu": 1})
    groups.learn("algo-3", "2026-12-02 " + start_line("algo-3", "data loaders", "data", "ml.c5"))
    assert groups.group_of("algo-3") == "data loaders"
    assert groups.group_of("algo-1") is None  # not by elimination: one data host is unknown


def test_other_lines_and_unknown_groups_place_nobody() -> None:
    groups = HostGroups({"data": 1, "gpu": 1})
    groups.learn("algo-1", interval_line("gpu", 10.0, 0.5))
    groups.learn("algo-2", start_line("algo-2", "cpu", "data", "ml.c5"))
    assert groups.group_of("algo-1") is None and groups.group_of("algo-2") is None
