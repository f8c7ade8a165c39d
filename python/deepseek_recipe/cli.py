"""``deepseek-recipe``: render or encode a request file from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import deepseek_recipe as dr

PROTOCOLS: dict[str, Any] = {
    "chat": dr.ChatCompletionRequest,
    "responses": dr.ResponsesRequest,
    "messages": dr.MessagesRequest,
}


def _encoding(version: dr.ModelVersion) -> dr.DeepseekV4Encoding | dr.DeepseekV41Encoding:
    if version == dr.ModelVersion.DeepseekV4Pro:
        return dr.DeepseekV4Encoding()
    return dr.DeepseekV41Encoding()


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
    parser = argparse.ArgumentParser(prog="deepseek-recipe", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
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


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    raw = sys.stdin.buffer.read() if args.request == "-" else open(args.request, "rb").read()
    try:
        request = PROTOCOLS[args.protocol](raw)
        options = dr.ConversionOptions(default_thinking_mode=not args.no_thinking)
        converted = request.convert(options)
    except dr.ConversionError as e:
        print(f"error ({e.status_code}): {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    encoding = _encoding(converted.model_version)
    rendered = encoding.render_conversation(converted.conversation)
    ids: list[int] | None = None
    if args.command == "encode" or args.format in ("ids", "json"):
        tokenizer = dr.Tokenizer.from_file(args.tokenizer) if args.tokenizer else dr.default_tokenizer()
        try:
            ids = encoding.with_tokenizer(tokenizer).encode(converted.conversation)
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if args.format == "text":
        print(_marked(rendered.prompt, rendered.special_ranges))
    elif args.format == "ids":
        print(" ".join(map(str, ids or [])))
    else:
        print(
            json.dumps(
                {
                    "model_version": "DeepseekV4Pro" if converted.model_version == dr.ModelVersion.DeepseekV4Pro else "DeepseekV41Flash",
                    "prompt": rendered.prompt,
                    "special_ranges": rendered.special_ranges,
                    "token_ids": ids,
                },
                ensure_ascii=False,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
