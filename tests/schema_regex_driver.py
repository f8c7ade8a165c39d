"""The verdict rule of the schema-regex table, shared by its recorder and its test.

`scripts/record/schema_regex.py` applies it under the public deepseek-recipe 0.2.0 wheel to
record `reference_tables/schema_regex.json.gz`; `test_schema_regex.py` applies it under this
project. Whatever `deepseek_recipe` is importable is the one asked.
"""

from __future__ import annotations

import json
from typing import Any

import deepseek_recipe as dr

MODEL = "DeepSeek-V4-Pro"
DRAFT7 = "http://json-schema.org/draft-07/schema#"
SUBSCHEMA_ERROR = 'Invalid json schema: {"type":"string"} is not a "regex"'


def convert(schema: dict[str, Any]) -> str | None:
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "json"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
    }
    try:
        dr.ChatCompletionRequest(json.dumps(body)).convert(dr.ConversionOptions())
    except dr.ConversionError as error:
        return str(error)
    return None


def not_a_regex(value: str) -> str:
    return f'Invalid json schema: {json.dumps(value, ensure_ascii=False, separators=(",", ":"))} is not a "regex"'


def compiles(pattern: str) -> bool:
    error = convert({"pattern": pattern})
    assert error in (None, not_a_regex(pattern)), error
    return error is None


def ecma(pattern: str) -> bool:
    error = convert({"$schema": DRAFT7, "patternProperties": {pattern: {"type": "string"}}})
    assert error in (None, SUBSCHEMA_ERROR, not_a_regex(pattern)), error
    return error != not_a_regex(pattern)
