"""Every Python example in the README runs as written (in order, sharing one namespace).

The quick start talks to a gateway at ``http://127.0.0.1:8000``; here that gateway (the same
app ``deepseek-recipe serve`` runs, demo engine) listens on a free port, and the examples get
its address instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deepseek_recipe.gateway import GatewaySettings, create_app
from tests.gateway_support import serving

README = Path(__file__).resolve().parents[1] / "README.md"
QUICK_START_URL = "http://127.0.0.1:8000"


def test_readme_python_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 4
    assert any(QUICK_START_URL in block for block in blocks)
    namespace: dict[str, object] = {}
    with serving(create_app(GatewaySettings(log_requests=False))) as server:
        for block in blocks:
            code = block.replace(QUICK_START_URL, server.url)
            exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - our own docs
    out = capsys.readouterr().out
    assert "You said: “Hello!”" in out  # the OpenAI quick start
    assert "You said: “Hi!”" in out  # the Anthropic one, streamed


def test_readme_set_up_commands_are_the_scripts() -> None:
    text = README.read_text(encoding="utf-8")
    assert "    bash scripts/run.sh\n" in text and "    bash scripts/test.sh\n" in text
    assert "../shared" not in text and "behavior.md" not in text
