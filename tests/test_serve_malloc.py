"""``serve`` asks glibc's malloc for transparent huge pages (the ``huge_pages`` setting): it starts
itself again, same process, with ``GLIBC_TUNABLES`` set, unless told not to or the user set the
variable."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

import pytest

from deepseek_recipe.gateway import GatewaySettings
from deepseek_recipe.gateway.server import HUGE_PAGE_TUNABLES, restart_with_huge_pages
from tests.ops_support import serve_process

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="the tunables are glibc's"
)


def _tunables(pid: int) -> str | None:
    """The process's ``GLIBC_TUNABLES`` as ``/proc`` shows it: glibc parses the variable in place
    as the process starts, and leaves it cut at the first ``:`` there (the process's own copy
    of its environment keeps the whole value)."""
    for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        name, _, value = entry.partition(b"=")
        if name == b"GLIBC_TUNABLES":
            return value.decode()
    return None


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, HUGE_PAGE_TUNABLES),
        ({"DEEPSEEK_RECIPE_HUGE_PAGES": "false"}, None),
        ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, "glibc.malloc.arena_max=2"),
    ],
    ids=["default", "off", "the_users_own"],
)
def test_serve_sets_mallocs_tunables_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str | None
) -> None:
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    with serve_process("--store", "none", "--log-requests", "false", env=env) as served:
        # The server answering is the process started (execve keeps its pid), started again.
        assert _tunables(served.process.pid) == (expected.partition(":")[0] if expected else None)


def test_a_process_that_cannot_start_again_serves_without_huge_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """``execve`` refused (a sandbox, say): a warning, and the gateway serves as it is."""
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    calls: list[tuple[str, list[str], dict[str, str]]] = []

    def refused(path: str, argv: list[str], env: dict[str, str]) -> None:
        calls.append((path, argv, env))
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "execve", refused)
    warning = restart_with_huge_pages(GatewaySettings(store="none"))
    assert warning == ("serving without huge pages: the process could not start itself again (Operation not permitted)")
    ((path, argv, env),) = calls  # asked once, as the process was started, with the tunables
    assert (path, argv, env["GLIBC_TUNABLES"]) == (sys.executable, sys.orig_argv, HUGE_PAGE_TUNABLES)
    assert restart_with_huge_pages(GatewaySettings(store="none", huge_pages=False)) is None
    assert len(calls) == 1
