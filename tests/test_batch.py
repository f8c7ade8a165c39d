"""Batch preprocessing: every batch kind, errors kept per row, pickling, and a Ray Data pipeline
in a local Ray cluster that gives exactly what the plain function gives."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import deepseek_recipe as dr
from deepseek_recipe.batch import COLUMNS, PrepareBatch, prepare_batch, prepare_rows
from deepseek_recipe.frontend import Frontend

MODEL = "DeepSeek-V4-Pro"


def dataset(rows: int) -> list[dict[str, Any]]:
    """Requests of the three protocols, some with a shared system prompt and tools, one bad."""
    tools = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {}}}}]
    out: list[dict[str, Any]] = []
    for k in range(rows):
        text = f"Request {k}: summarise file {k % 7}.py " * (1 + k % 5)
        if k % 3 == 0:
            body: dict[str, Any] = {
                "model": MODEL,
                "messages": [{"role": "system", "content": "Be brief. " * 40}, {"role": "user", "content": text}],
                "tools": tools,
                "temperature": 0.5,
                "max_tokens": 100 + k,
                "thinking": {"type": "disabled"},  # thinking mode fixes temperature at 1
            }
            protocol = "chat"
        elif k % 3 == 1:
            body = {"model": MODEL, "input": text, "instructions": "Be brief.", "max_output_tokens": 64}
            protocol = "responses"
        else:
            body = {
                "model": MODEL,
                "max_tokens": 50,
                "messages": [{"role": "user", "content": text}],
                "stop_sequences": ["END"],
            }
            protocol = "messages"
        out.append({"id": k, "protocol": protocol, "body": json.dumps(body)})
    out[rows // 2]["body"] = json.dumps({"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]})
    return out


@pytest.fixture(scope="module")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


def expected_row(frontend: Frontend, row: dict[str, Any]) -> dict[str, Any]:
    prepared = frontend.prepare(row["protocol"], row["body"])
    ids = prepared.prompt_ids
    return {
        "model": prepared.model,
        "prompt_ids": ids.tolist(),
        "prompt_tokens": len(ids),
        "block_hashes": ids.block_hashes(),
        "max_tokens": prepared.sampling.max_tokens,
        "stop": prepared.stop,
        "stop_token_ids": prepared.stop_token_ids,
        "error": None,
    }


def test_rows_are_what_the_frontend_prepares(frontend: Frontend) -> None:
    rows = dataset(12)
    columns = prepare_rows([r["body"] for r in rows], [r["protocol"] for r in rows], frontend=frontend)
    assert list(columns) == list(COLUMNS)
    bad = len(rows) // 2
    for k, row in enumerate(rows):
        got = {name: columns[name][k] for name in COLUMNS}
        if k == bad:
            assert got["error"] and "no-such-model" in got["error"]
            assert all(got[name] is None for name in COLUMNS if name != "error")
            continue
        expected = expected_row(frontend, row)
        assert {name: got[name] for name in expected} == expected
    assert columns["temperature"][0] == 0.5 and columns["max_tokens"][0] == 100
    assert columns["stop"][2] == ["END"]
    with pytest.raises(dr.ConversionError):
        prepare_rows([rows[bad]["body"]], ["chat"], frontend=frontend, on_error="raise")
    with pytest.raises(ValueError, match="unknown protocol"):
        prepare_rows([rows[0]["body"]], ["grpc"], frontend=frontend, on_error="raise")


def test_every_batch_kind_gives_the_same_columns(frontend: Frontend) -> None:
    rows = dataset(9)
    table = pa.Table.from_pylist(rows)
    arrow = prepare_batch(table, frontend=frontend, protocol=None)
    assert isinstance(arrow, pa.Table)
    assert arrow.schema.field("prompt_ids").type == pa.list_(pa.uint32())
    assert arrow.schema.field("block_hashes").type == pa.list_(pa.uint64())
    reference = arrow.select(list(COLUMNS)).to_pylist()

    frame = prepare_batch(table.to_pandas(), frontend=frontend, protocol=None)
    assert isinstance(frame, pd.DataFrame) and list(frame["id"]) == list(range(9))
    assert str(frame["max_tokens"].dtype) == "Int64"
    lists = prepare_batch({k: [r[k] for r in rows] for k in rows[0]}, frontend=frontend, protocol=None)
    numpy = prepare_batch({k: np.array([r[k] for r in rows]) for k in rows[0]}, frontend=frontend, protocol=None)
    assert isinstance(numpy["prompt_ids"], np.ndarray)
    for k, expected in enumerate(reference):
        assert {c: _plain(frame[c].iloc[k]) for c in COLUMNS} == expected
        assert {c: lists[c][k] for c in COLUMNS} == expected
        assert {c: _plain(numpy[c][k]) for c in COLUMNS} == expected
    # A fixed protocol needs no protocol column; bytes and dict bodies work too.
    chats = [json.loads(r["body"]) for r in rows if r["protocol"] == "chat" and "no-such" not in r["body"]]
    plain = prepare_batch({"body": chats}, frontend=frontend)
    assert (
        plain["prompt_ids"][0]
        == expected_row(frontend, {"protocol": "chat", "body": json.dumps(chats[0])})["prompt_ids"]
    )
    as_bytes = prepare_batch({"body": [json.dumps(c).encode() for c in chats]}, frontend=frontend)
    assert as_bytes["block_hashes"] == plain["block_hashes"]
    with pytest.raises(KeyError, match="text"):
        prepare_batch({"body": chats}, frontend=frontend, body_column="text")
    with pytest.raises(TypeError):
        prepare_batch([1, 2], frontend=frontend)


def _plain(value: Any) -> Any:
    """A pandas / numpy cell as a plain Python value."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if value is pd.NA:
        return None
    return value


def test_the_stage_and_its_arguments_pickle(tokenizer: dr.Tokenizer) -> None:
    options = dr.ConversionOptions(default_thinking_mode=False).with_model_alias("agent", dr.ModelVersion.DeepseekV4Pro)
    stage = PrepareBatch(tokenizer=tokenizer, options=options, block_size=64)
    copy = pickle.loads(pickle.dumps(stage))
    batch = {"body": [json.dumps({"model": "agent", "messages": [{"role": "user", "content": "hi " * 100}]})]}
    assert copy(batch) == stage(batch)
    assert copy(batch)["error"] == [None] and len(copy(batch)["block_hashes"][0]) >= 1
    # The pieces on their own.
    restored = pickle.loads(pickle.dumps(options))
    assert (
        restored.default_thinking_mode is False
        and restored.model_versions_by_name["agent"] == dr.ModelVersion.DeepseekV4Pro
    )
    special = pickle.loads(pickle.dumps(dr.SpecialTokens(user="<U>")))
    assert special.token(dr.SpecialToken.User) == "<U>"
    assert pickle.loads(pickle.dumps(dr.ReasoningContentBehavior.Reject)) == dr.ReasoningContentBehavior.Reject
    assert pickle.loads(pickle.dumps(dr.WebSearchBehavior.Drop)) == dr.WebSearchBehavior.Drop
    again = pickle.loads(pickle.dumps(tokenizer))
    text = "Hello <｜User｜> 世界 🦀"
    assert again.encode(text) == tokenizer.encode(text) and again.encode_ordinary(text) == tokenizer.encode_ordinary(
        text
    )


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


# Ray warns about its own deprecated settings while it plans a dataset.
@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")
def test_ray_data_pipeline_equals_the_plain_function(ray_cluster: Any, frontend: Frontend) -> None:
    ray = ray_cluster
    rows = dataset(60)
    table = pa.Table.from_pylist(rows)
    ds = ray.data.from_arrow([table.slice(0, 20), table.slice(20, 20), table.slice(40)])
    ds = ds.map_batches(
        PrepareBatch,
        fn_constructor_kwargs={"protocol": None},
        batch_format="pyarrow",
        batch_size=16,
        compute=ray.data.ActorPoolStrategy(size=1),
    )
    result = pa.concat_tables(ray.get(ds.to_arrow_refs())).sort_by("id")
    plain = prepare_batch(table, frontend=frontend, protocol=None)
    assert result.num_rows == 60
    assert result.select(plain.column_names).to_pylist() == plain.to_pylist()
    assert sum(e is not None for e in result.column("error").to_pylist()) == 1
