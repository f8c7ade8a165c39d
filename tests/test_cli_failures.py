"""Every way the command line can fail ends in one clear line on stderr and a non-zero exit,
never a Python traceback, and it never reads unbounded input."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "chat_request.json"


def run(
    *args: str, stdin: bytes | None = None, stdin_path: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    if stdin_path is not None:
        with open(stdin_path, "rb") as source:
            return subprocess.run(
                [sys.executable, "-m", "deepseek_recipe", *args], stdin=source, capture_output=True, timeout=timeout
            )
    return subprocess.run(
        [sys.executable, "-m", "deepseek_recipe", *args], input=stdin, capture_output=True, timeout=timeout
    )


def one_clear_line(out: subprocess.CompletedProcess[bytes], status: int, *words: str) -> str:
    err = out.stderr.decode()
    assert out.returncode == status, (out.returncode, err)
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_missing_file() -> None:
    one_clear_line(run("render", "/no/such/request.json"), 2, "cannot read", "No such file")


def test_directory_as_input(tmp_path: Path) -> None:
    one_clear_line(run("encode", str(tmp_path)), 2, "cannot read", "Is a directory")


@pytest.mark.parametrize("kind", ["missing", "directory", "not_json", "not_a_tokenizer"])
def test_bad_tokenizer(tmp_path: Path, kind: str) -> None:
    path = {"missing": tmp_path / "nope.json", "directory": tmp_path}.get(kind, tmp_path / "t.json")
    if kind == "not_json":
        path.write_text("this is not json")
    elif kind == "not_a_tokenizer":
        path.write_text('{"hello": "world"}')
    one_clear_line(run("encode", "--tokenizer", str(path), str(SAMPLE)), 2, "cannot load tokenizer")


def test_endless_input_is_refused_not_read() -> None:
    one_clear_line(run("render", "-", stdin_path="/dev/zero"), 2, "larger than")


@pytest.mark.parametrize(
    "data", [b"", b"\xff\xfe", b"[" * 10_000, b'{"model": 5}'], ids=["empty", "utf8", "deep", "shape"]
)
def test_bad_request_bodies(data: bytes) -> None:
    one_clear_line(run("render", "-", stdin=data), 2, "error")


def test_usage_errors() -> None:
    for args in (["frobnicate"], ["render", "--protocol", "nope", str(SAMPLE)], []):
        out = run(*args)
        assert out.returncode == 2 and b"Traceback" not in out.stderr
        assert b"usage:" in out.stderr


def test_serve_with_bad_settings() -> None:
    out = run("serve", "--port", "not-a-port")
    assert out.returncode == 2 and b"Traceback" not in out.stderr
    one_clear_line(run("serve", "--backend", "completions"), 1, "cannot start", "backend URL")


def test_serve_on_a_busy_port() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = run("serve", "--port", str(port), "--log-requests", "false", timeout=180)
    err = out.stderr.decode()
    assert out.returncode != 0 and "Traceback" not in err
    assert "address already in use" in err.lower()


def test_closed_stdout_is_quiet(tmp_path: Path) -> None:
    big = tmp_path / "big.json"  # its output is far larger than a pipe's buffer
    big.write_text(
        json.dumps({"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "word " * 200_000}]})
    )
    script = f"{sys.executable} -m deepseek_recipe encode {big} --format json | head -c 1 >/dev/null"
    out = subprocess.run(["bash", "-o", "pipefail", "-c", script], capture_output=True, timeout=120)
    assert out.stderr == b"" and out.returncode == 1
