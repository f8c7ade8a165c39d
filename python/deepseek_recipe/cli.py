"""``deepseek-recipe``: serve the gateway or the visualizer page, or render / encode a request file.

Every failure is one line on standard error and a non-zero exit status (2 for bad input or
usage, 1 for anything else), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

import deepseek_recipe as dr
from deepseek_recipe.frontend import PROTOCOLS, REQUEST_CLASSES

MAX_INPUT_BYTES = 256 * 1024 * 1024
"""The largest request file ``render`` and ``encode`` read (more is refused, not loaded)."""


class CliError(Exception):
    """A failure reported as one line; ``status`` is the exit status."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _marked(prompt: str, ranges: list[tuple[int, int]]) -> str:
    """The prompt with each special range wrapped in ``[[...]]``."""
    out, last = [], 0
    for start, end in ranges:
        out.append(prompt[last:start])
        out.append("[[" + prompt[start:end] + "]]")
        last = end
    out.append(prompt[last:])
    return "".join(out)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deepseek-recipe", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    # `serve` is parsed by the settings model itself (see `_serve`); listed here for --help.
    sub.add_parser("serve", help="run the gateway (flags: deepseek-recipe serve --help)", add_help=False)
    sub.add_parser(
        "webui",
        help="run the visualizer page with the demo engine (flags: deepseek-recipe webui --help)",
        add_help=False,
    )
    for name, help_text in (("render", "print the rendered prompt"), ("encode", "print the prompt token ids")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("request", nargs="?", default="-", help="request JSON file, or - for stdin")
        p.add_argument("--protocol", choices=sorted(PROTOCOLS), default="chat")
        p.add_argument(
            "--format",
            choices=["text", "ids", "json"],
            default="text" if name == "render" else "ids",
            help="text: prompt with specials marked [[...]]; ids: token ids; json: everything",
        )
        p.add_argument("--tokenizer", help="tokenizer.json (default: the DeepSeek V4 tokenizer)")
        p.add_argument("--no-thinking", action="store_true", help="default thinking mode off")
    return parser


def _read_request(path: str) -> bytes:
    """The request file (or stdin), at most :data:`MAX_INPUT_BYTES`."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with open(path, "rb") as file:
                data = file.read(MAX_INPUT_BYTES + 1)
    except OSError as error:
        raise CliError(f"cannot read {path!r}: {error.strerror or type(error).__name__}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise CliError(f"{'standard input' if path == '-' else repr(path)} is larger than {MAX_INPUT_BYTES} bytes")
    return data


def _load_tokenizer(path: str | None) -> dr.Tokenizer:
    try:
        return dr.Tokenizer.from_file(path) if path else dr.default_tokenizer()
    except (OSError, RuntimeError, ValueError) as error:
        raise CliError(f"cannot load tokenizer {path!r}: {error}") from None


def _render_or_encode(args: argparse.Namespace) -> int:
    raw = _read_request(args.request)
    needs_ids = args.command == "encode" or args.format in ("ids", "json")
    tokenizer = _load_tokenizer(args.tokenizer) if needs_ids else None
    try:
        request = REQUEST_CLASSES[args.protocol](raw)
        converted = request.convert(dr.ConversionOptions(default_thinking_mode=not args.no_thinking))
    except dr.ConversionError as e:
        raise CliError(f"error ({e.status_code}): {e}") from None
    except ValueError as e:
        raise CliError(f"error: {e}") from None
    rendered = converted.model_version.encoding().render_conversation(converted.conversation)
    ids: list[int] | None = None
    if tokenizer is not None:
        try:
            ids = rendered.encode(tokenizer)
        except dr.TokenizerError as e:
            raise CliError(f"error: {e}") from None
    if args.format == "text":
        print(_marked(rendered.prompt, rendered.special_ranges))
    elif args.format == "ids":
        print(" ".join(map(str, ids or [])))
    else:
        out = {
            "model_version": converted.model_version.name,
            "prompt": rendered.prompt,
            "special_ranges": rendered.special_ranges,
        }
        print(json.dumps({**out, "token_ids": ids}, ensure_ascii=False))
    return 0


def _settings(command: str, argv: Sequence[str]) -> Any:
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from deepseek_recipe.gateway import GatewaySettings

    try:
        return GatewaySettings(
            _cli_parse_args=list(argv), _cli_prog_name=f"deepseek-recipe {command}", _cli_kebab_case=True
        )  # type: ignore[call-arg]
    except (ValidationError, SettingsError) as error:
        raise CliError(f"invalid settings: {_first_error(error)}") from None


def _serve(argv: Sequence[str]) -> int:
    run_gateway(_settings("serve", argv))
    return 0


def _webui(argv: Sequence[str]) -> int:
    """The visualizer page alone: the gateway app with the embedded demo engine (its API
    routes come along; the page is at ``/``)."""
    settings = _settings("webui", argv)
    if settings.backend != "demo":
        raise CliError("webui runs the demo engine; to see the page in front of real engines, use serve")
    settings = settings.model_copy(update={"webui": True})
    run_gateway(settings, banner=f"deepseek-recipe: the page is at http://{settings.host}:{settings.port}/")
    return 0


def _first_error(error: Exception) -> str:
    from pydantic import ValidationError

    if isinstance(error, ValidationError) and error.errors():
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}"
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def run_gateway(settings: Any, banner: str | None = None) -> None:
    """Serve ``settings`` with uvicorn until interrupted (several worker processes if asked),
    ``banner`` written to stderr first."""
    from deepseek_recipe.gateway.server import restart_with_huge_pages

    restart_failed = restart_with_huge_pages(settings)  # before anything else is done
    if banner is not None:
        print(banner, file=sys.stderr)

    import logging.config

    import uvicorn

    from deepseek_recipe.gateway import create_app
    from deepseek_recipe.gateway.server import freeze_startup_objects, uvicorn_options, warnings_at_start

    common: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": "info",
        "log_config": _log_config(),
        **uvicorn_options(settings),
    }
    logging.config.dictConfig(common["log_config"])
    for warning in ([restart_failed] if restart_failed else []) + warnings_at_start(settings):
        logging.getLogger("deepseek_recipe.gateway").warning(warning)
    if settings.workers == 1:
        try:
            app = create_app(settings)
        except (OSError, RuntimeError, ValueError) as error:
            raise CliError(f"cannot start: {error}", status=1) from None
        freeze_startup_objects()
        uvicorn.run(app, **common)
        return
    # Worker processes build their app from the environment; metrics are aggregated on disk.
    for name, value in settings.model_dump(mode="json", exclude={"api_keys", "keys"}).items():
        if value is not None:
            os.environ[f"DEEPSEEK_RECIPE_{name.upper()}"] = _env_value(value)
    os.environ["DEEPSEEK_RECIPE_API_KEYS"] = ",".join(k.get_secret_value() for k in settings.api_keys)
    keys = {name: {**entry.model_dump(), "key": entry.key.get_secret_value()} for name, entry in settings.keys.items()}
    os.environ["DEEPSEEK_RECIPE_KEYS"] = json.dumps(keys)
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="deepseek-recipe-metrics-"))
    uvicorn.run("deepseek_recipe.gateway.app:app_from_env", factory=True, workers=settings.workers, **common)


def _log_config() -> dict[str, Any]:
    """uvicorn's logging, plus the gateway's request lines (JSON, as they are) on stderr; applied
    in every worker process."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["line"] = {"format": "%(message)s"}
    config["handlers"]["lines"] = {"formatter": "line", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"}
    config["loggers"]["deepseek_recipe"] = {"handlers": ["lines"], "level": "INFO", "propagate": False}
    config["loggers"]["httpx"] = {"level": "WARNING"}  # a line per engine call is noise
    return config


def _env_value(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["serve"]:
            return _serve(argv[1:])
        if argv[:1] == ["webui"]:
            return _webui(argv[1:])
        return _render_or_encode(_parser().parse_args(argv))
    except CliError as error:
        print(f"deepseek-recipe: {error}", file=sys.stderr)
        return error.status
    except MemoryError:
        print("deepseek-recipe: out of memory", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python's final flush of
        # stdout from failing again on the way out.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
