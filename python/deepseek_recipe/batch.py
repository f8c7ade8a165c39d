"""Batch preprocessing: request bodies of any protocol in, what an engine needs out.

Offline jobs turn millions of requests into engine inputs with exactly the ids the gateway
would send. :func:`prepare_batch` does one batch: a ``pyarrow.Table``, a ``pandas.DataFrame``
or a dict of columns (lists or numpy arrays) with a column of request bodies (JSON text,
bytes or dicts) comes back as the same kind of batch with these columns added:

============================  ==================================================================
``model``                     the model the request names
``prompt_ids``                the prompt's token ids (what ``Frontend.prepare`` makes)
``prompt_tokens``             their count
``block_hashes``              one chained hash per full KV block (:func:`deepseek_recipe.block_hashes`)
``max_tokens``                the token budget, resolved against the context limit
``temperature``, ``top_p``,   the request's sampling settings (null: the engine's default)
``seed``, ``logprobs``,
``top_logprobs``
``stop``                      stop sequences (match them on parsed content, not on raw output)
``stop_token_ids``            the end-of-sentence id, for the engine's stop tokens
``error``                     null, or why the request cannot be served (its other columns null)
============================  ==================================================================

:class:`PrepareBatch` is the same as a Ray Data ``map_batches`` stage: a callable class, so
each worker builds its :class:`~deepseek_recipe.Frontend` (and loads the tokenizer) once::

    ds = ray.data.read_text("requests.jsonl")  # one body per line, column "text"
    ds = ds.map_batches(PrepareBatch, fn_constructor_kwargs={"body_column": "text"},
                        batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=4))

Its arguments (a ``Tokenizer``, ``ConversionOptions``) pickle, so they travel to workers.
pyarrow, pandas and numpy are imported only when a batch of theirs comes in.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeAlias

from deepseek_recipe._native import ConversionError, ConversionOptions, Tokenizer, block_hashes
from deepseek_recipe.frontend import DEFAULT_CONTEXT_LIMIT, PROTOCOLS, Frontend, Protocol
from deepseek_recipe.routing import DEFAULT_BLOCK_SIZE

OnError: TypeAlias = Literal["record", "raise"]
Body: TypeAlias = bytes | str | dict[str, Any]

COLUMNS = (
    "model",
    "prompt_ids",
    "prompt_tokens",
    "block_hashes",
    "max_tokens",
    "temperature",
    "top_p",
    "seed",
    "logprobs",
    "top_logprobs",
    "stop",
    "stop_token_ids",
    "error",
)
"""The columns :func:`prepare_batch` adds, in order."""


def prepare_rows(
    bodies: Iterable[Body],
    protocols: Iterable[str],
    *,
    frontend: Frontend,
    block_size: int = DEFAULT_BLOCK_SIZE,
    on_error: OnError = "record",
) -> dict[str, list[Any]]:
    """The added columns for ``bodies`` (each in the protocol at the same position), as lists."""
    out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for body, protocol in zip(bodies, protocols, strict=True):
        try:
            if protocol not in PROTOCOLS:
                raise ValueError(f"unknown protocol {protocol!r} (expected one of {', '.join(PROTOCOLS)})")
            if isinstance(body, (bytearray, memoryview)):
                body = bytes(body)
            prepared = frontend.prepare(protocol, body)
        except (ValueError, TypeError, ConversionError, RuntimeError) as error:
            if on_error == "raise":
                raise
            for name in COLUMNS:
                out[name].append(None)
            out["error"][-1] = str(error) or type(error).__name__
            continue
        ids, sampling = prepared.prompt_ids, prepared.sampling
        out["model"].append(prepared.model)
        out["prompt_ids"].append(ids.tolist())
        out["prompt_tokens"].append(len(ids))
        out["block_hashes"].append(block_hashes(ids, block_size))
        out["max_tokens"].append(sampling.max_tokens)
        out["temperature"].append(sampling.temperature)
        out["top_p"].append(sampling.top_p)
        out["seed"].append(sampling.seed)
        out["logprobs"].append(sampling.logprobs)
        out["top_logprobs"].append(sampling.top_logprobs)
        out["stop"].append(list(prepared.stop))
        out["stop_token_ids"].append(list(prepared.stop_token_ids))
        out["error"].append(None)
    return out


def prepare_batch(
    batch: Any,
    *,
    frontend: Frontend | None = None,
    protocol: Protocol | None = "chat",
    body_column: str = "body",
    protocol_column: str = "protocol",
    block_size: int = DEFAULT_BLOCK_SIZE,
    on_error: OnError = "record",
) -> Any:
    """``batch`` with the columns of :data:`COLUMNS` added (see the module doc).

    Bodies are read from ``body_column``; they are all in ``protocol``, or, with
    ``protocol=None``, each in the protocol its row names in ``protocol_column``. A body that
    cannot be prepared gets its message in ``error`` (``on_error="raise"``: raises instead).
    ``frontend`` defaults to one with the default tokenizer and options.
    """
    frontend = frontend if frontend is not None else Frontend()
    kind = _kind(batch)
    bodies = _column(batch, kind, body_column)
    protocols: Sequence[str] = (
        [protocol] * len(bodies) if protocol is not None else _column(batch, kind, protocol_column)
    )
    columns = prepare_rows(bodies, protocols, frontend=frontend, block_size=block_size, on_error=on_error)
    return _with_columns(batch, kind, columns)


class PrepareBatch:
    """:func:`prepare_batch` as a callable class (a Ray Data ``map_batches`` stage): the
    :class:`~deepseek_recipe.Frontend` is built once, at construction (once per Ray worker).

    ``tokenizer`` is a ``Tokenizer``, a ``tokenizer.json`` path (``str`` or ``os.PathLike``),
    or ``None`` for the default DeepSeek V4 one; ``options`` and ``context_limit`` are the
    ``Frontend``'s. Pickles as its arguments (the frontend is rebuilt where it is unpickled).
    """

    def __init__(
        self,
        *,
        tokenizer: Tokenizer | str | os.PathLike[str] | None = None,
        options: ConversionOptions | None = None,
        context_limit: int = DEFAULT_CONTEXT_LIMIT,
        protocol: Protocol | None = "chat",
        body_column: str = "body",
        protocol_column: str = "protocol",
        block_size: int = DEFAULT_BLOCK_SIZE,
        on_error: OnError = "record",
    ) -> None:
        self._arguments: dict[str, Any] = {
            "tokenizer": tokenizer,
            "options": options,
            "context_limit": context_limit,
            "protocol": protocol,
            "body_column": body_column,
            "protocol_column": protocol_column,
            "block_size": block_size,
            "on_error": on_error,
        }
        loaded = tokenizer if tokenizer is None or isinstance(tokenizer, Tokenizer) else Tokenizer.from_file(tokenizer)
        self.frontend = Frontend(loaded, options=options, context_limit=context_limit)
        self.protocol, self.body_column, self.protocol_column = protocol, body_column, protocol_column
        self.block_size, self.on_error = block_size, on_error

    def __call__(self, batch: Any) -> Any:
        return prepare_batch(
            batch,
            frontend=self.frontend,
            protocol=self.protocol,
            body_column=self.body_column,
            protocol_column=self.protocol_column,
            block_size=self.block_size,
            on_error=self.on_error,
        )

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_rebuild, (self._arguments,))


def _rebuild(arguments: dict[str, Any]) -> PrepareBatch:
    return PrepareBatch(**arguments)


# -- batch kinds -------------------------------------------------------------------------------

_Kind: TypeAlias = Literal["arrow", "pandas", "lists", "numpy"]


def _kind(batch: Any) -> _Kind:
    module = type(batch).__module__
    if module.startswith("pyarrow"):
        return "arrow"
    if module.startswith("pandas"):
        return "pandas"
    if isinstance(batch, dict):
        first = next(iter(batch.values()), None)
        return "numpy" if type(first).__module__ == "numpy" else "lists"
    raise TypeError(f"a batch is a pyarrow Table, a pandas DataFrame or a dict of columns, not {type(batch).__name__}")


def _column(batch: Any, kind: _Kind, name: str) -> list[Any]:
    try:
        if kind == "arrow":
            return list(batch.column(name).to_pylist())
        if kind == "pandas":
            return list(batch[name].tolist())
        return list(batch[name])
    except KeyError:
        raise KeyError(f"the batch has no column {name!r}") from None


def _with_columns(batch: Any, kind: _Kind, columns: dict[str, list[Any]]) -> Any:
    if kind == "arrow":
        import pyarrow as pa

        types = _arrow_types(pa)
        for name, values in columns.items():
            array = pa.array(values, type=types[name])
            index = batch.schema.get_field_index(name)
            batch = batch.set_column(index, name, array) if index >= 0 else batch.append_column(name, array)
        return batch
    if kind == "pandas":
        import pandas as pd

        batch = batch.copy()
        for name, values in columns.items():
            batch[name] = pd.Series(values, index=batch.index, dtype=_PANDAS_TYPES.get(name, object))
        return batch
    out = dict(batch)
    if kind == "numpy":
        import numpy as np

        for name, values in columns.items():
            array = np.empty(len(values), dtype=object)
            for row, value in enumerate(values):  # one by one: equal-length lists must not become 2-D
                array[row] = np.asarray(value) if isinstance(value, list) else value
            out[name] = array
        return out
    out.update(columns)
    return out


# Nullable types, so a row with an error keeps its integer columns integers.
_PANDAS_TYPES = {
    "prompt_tokens": "Int64",
    "max_tokens": "Int64",
    "temperature": "Float64",
    "top_p": "Float64",
    "seed": "Int64",
    "logprobs": "boolean",
    "top_logprobs": "Int64",
}


def _arrow_types(pa: Any) -> dict[str, Any]:
    return {
        "model": pa.string(),
        "prompt_ids": pa.list_(pa.uint32()),
        "prompt_tokens": pa.int64(),
        "block_hashes": pa.list_(pa.uint64()),
        "max_tokens": pa.int64(),
        "temperature": pa.float64(),
        "top_p": pa.float64(),
        "seed": pa.int64(),
        "logprobs": pa.bool_(),
        "top_logprobs": pa.int64(),
        "stop": pa.list_(pa.string()),
        "stop_token_ids": pa.list_(pa.uint32()),
        "error": pa.string(),
    }
