"""The command line, run as a user would: the installed ``deepseek-recipe`` script and ``python -m``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "chat_request.json"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deepseek_recipe", *args],
        input=stdin.decode() if stdin else None,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_render_marks_special_tokens_and_keeps_typed_ones_plain() -> None:
    out = run("render", str(SAMPLE))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("[[<｜begin▁of▁sentence｜>]]")
    assert "[[<｜User｜>]]What is the weather in Paris? (typed, not a token: <｜User｜>)" in out.stdout
    assert "[[｜DSML｜]]" in out.stdout


def test_encode_ids_match_json_output() -> None:
    ids = run("encode", str(SAMPLE))
    assert ids.returncode == 0, ids.stderr
    full = run("render", "--format", "json", str(SAMPLE))
    data = json.loads(full.stdout)
    assert [int(i) for i in ids.stdout.split()] == data["token_ids"]
    assert data["token_ids"][0] == 0 and data["model_version"] == "DeepseekV4Pro"


@pytest.mark.parametrize(
    ("protocol", "body"),
    [
        ("responses", {"model": "DeepSeek-V4-Pro", "input": "hi"}),
        ("messages", {"model": "DeepSeek-V4-Pro", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}),
    ],
)
def test_other_protocols_from_stdin(protocol: str, body: dict[str, object]) -> None:
    out = run("render", "--protocol", protocol, "-", stdin=json.dumps(body).encode())
    assert out.returncode == 0, out.stderr
    assert "[[<｜User｜>]]hi[[<｜Assistant｜>]][[<think>]]" in out.stdout


def test_bad_request_is_a_clear_error() -> None:
    out = run("render", "-", stdin=b'{"model": "nope", "messages": [{"role": "user", "content": "x"}]}')
    assert out.returncode == 2
    assert "error (400): The supported API model names are" in out.stderr


def test_installed_script() -> None:
    script = shutil.which("deepseek-recipe", path=str(Path(sys.executable).parent))
    assert script is not None
    out = subprocess.run([script, "render", str(SAMPLE)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
