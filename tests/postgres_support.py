"""A real PostgreSQL for the tests, started by the test code itself: ``initdb`` and ``pg_ctl``
(Debian's ``postgresql`` package, which ``scripts/test.sh`` installs) in a temporary
directory, on a free loopback port, stopped afterwards. PostgreSQL refuses to run as root,
so as root it runs as the ``postgres`` user (``runuser``)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.ports import free_port


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def available() -> bool:
    return _bin("initdb") is not None and _bin("pg_ctl") is not None


class Postgres:
    """One server: ``start()``, ``url(database)``, ``create_database()``, ``stop()``."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="deepseek-recipe-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._as_root = os.geteuid() == 0
        self._databases = 0
        if self._as_root:
            shutil.chown(self.root, "postgres", "postgres")
            os.chmod(self.root, 0o700)

    def _run(self, *args: str) -> None:
        command = list(args)
        if self._as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def init(self) -> Postgres:
        initdb = _bin("initdb")
        assert initdb is not None
        self._run(initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        return self

    def start(self) -> Postgres:
        pg_ctl = _bin("pg_ctl")
        assert pg_ctl is not None
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")
        return self

    def stop(self) -> None:
        pg_ctl = _bin("pg_ctl")
        assert pg_ctl is not None
        self._run(pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh, empty database's URL."""
        import psycopg

        self._databases += 1
        name = f"test_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def remove(self) -> None:
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def started() -> Iterator[Postgres]:
    """A server for the caller's use, removed afterwards (the test is skipped without one)."""
    import pytest

    if not available():
        pytest.skip("PostgreSQL (initdb, pg_ctl) is not installed; scripts/test.sh installs it")
    server = Postgres().init().start()
    try:
        yield server
    finally:
        server.remove()
