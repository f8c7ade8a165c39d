"""KV block hashes: the documented definition, shared prefixes, and the same values on every
thread, in every process and after pickling."""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import pickle
import struct
import subprocess
import sys
from array import array

import pytest
import xxhash

import deepseek_recipe as dr
from deepseek_recipe._native import TokenIds
from deepseek_recipe.frontend import Frontend

# Pinned: these values never change between versions or platforms (docs/gateway.md).
PINNED = [
    ([1, 2, 3, 4], 4, [0x341839ABBE30BE0B]),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9], 4, [0x341839ABBE30BE0B, 0x37B6DE0623BDB5CA]),
    ([0], 1, [0xC4998F9169C2A4F0]),
    (list(range(300)), 128, [0x2BE4082DC62EBDD4, 0xE1E439048A9998C4]),
    ([1, 2, 3], 4, []),
    ([], 128, []),
]


def by_definition(ids: list[int], block_size: int) -> list[int]:
    """The documented definition, computed with the ``xxhash`` package."""
    previous, out = 0, []
    for start in range(0, len(ids) - block_size + 1, block_size):
        data = struct.pack("<Q", previous) + struct.pack(f"<{block_size}I", *ids[start : start + block_size])
        previous = xxhash.xxh3_64_intdigest(data)
        out.append(previous)
    return out


def conversation(turns: int, tail: str = "") -> bytes:
    messages: list[dict[str, str]] = [{"role": "system", "content": "You are a careful agent. " * 40}]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Step {turn}: look at file {turn}.py and report. " * 8})
        messages.append({"role": "assistant", "content": f"File {turn}.py defines {turn} functions. " * 6})
    messages.append({"role": "user", "content": "What next?" + tail})
    return json.dumps({"model": "DeepSeek-V4-Pro", "messages": messages}).encode()


@pytest.mark.parametrize(("ids", "block_size", "expected"), PINNED)
def test_pinned_vectors(ids: list[int], block_size: int, expected: list[int]) -> None:
    assert dr.block_hashes(ids, block_size) == expected
    assert TokenIds(ids).block_hashes(block_size) == expected


@pytest.mark.parametrize("block_size", [1, 7, 128, 1000])
def test_the_documented_definition(block_size: int) -> None:
    ids = [(k * 2_654_435_761) % 129_280 for k in range(3_000)]
    assert dr.block_hashes(ids, block_size) == by_definition(ids, block_size)
    # The prefix hash continues the chain over a partial last block.
    length = block_size * 2 + block_size // 2 if block_size > 1 else 5
    full = by_definition(ids, block_size)[: length // block_size]
    rest = ids[len(full) * block_size : length]
    expected = xxhash.xxh3_64_intdigest(
        struct.pack("<Q", full[-1] if full else 0) + struct.pack(f"<{len(rest)}I", *rest)
    )
    assert dr.prefix_hash(ids, length, block_size) == (expected if rest else full[-1])


def test_every_kind_of_ids_gives_the_same_hashes(frontend: Frontend) -> None:
    ids = frontend.prepare("chat", conversation(3)).prompt_ids
    as_list = ids.tolist()
    expected = by_definition(as_list, 128)
    assert len(expected) >= 3
    assert ids.block_hashes() == expected
    assert dr.block_hashes(ids) == expected
    assert dr.block_hashes(as_list) == expected
    assert dr.block_hashes(tuple(as_list)) == expected
    assert dr.block_hashes(array("I", as_list)) == expected
    assert dr.block_hashes(TokenIds(as_list)) == expected


def test_equal_prefixes_share_hashes_and_the_first_difference_changes_the_rest(frontend: Frontend) -> None:
    # A growing conversation: every earlier prompt's full blocks lead the next one's.
    prompts = [frontend.prepare("chat", conversation(turns)).prompt_ids for turns in range(1, 5)]
    hashes = [ids.block_hashes() for ids in prompts]
    for k in range(len(prompts) - 1):
        shared = _shared_prefix(prompts[k].tolist(), prompts[k + 1].tolist())
        assert shared // 128 >= 2
        assert hashes[k + 1][: shared // 128] == hashes[k][: shared // 128]
        assert all(a != b for a, b in zip(hashes[k][shared // 128 :], hashes[k + 1][shared // 128 :]))
    # One token changed: blocks before it equal, that block and every later one differ.
    base = prompts[-1].tolist()
    for position in (0, 127, 128, 500, len(base) - 1):
        changed = list(base)
        changed[position] += 1
        a, b = dr.block_hashes(base), dr.block_hashes(changed)
        first = position // 128
        assert a[:first] == b[:first]
        assert all(x != y for x, y in zip(a[first:], b[first:]))


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="block_size"):
        dr.block_hashes([1, 2], 0)
    with pytest.raises(ValueError, match="block_size"):
        TokenIds([1]).block_hashes(0)
    with pytest.raises(OverflowError):
        dr.block_hashes([-1])
    with pytest.raises(TypeError):
        dr.block_hashes(["a"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        TokenIds([1, 2]).index(3)
    assert TokenIds([5, 6, 5]).index(5, 1) == 2


def test_the_same_on_every_thread(frontend: Frontend) -> None:
    ids = frontend.prepare("chat", conversation(12)).prompt_ids
    expected = ids.block_hashes()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: ids.block_hashes(), range(16)))
    assert all(result == expected for result in results)


def _hashes_in_a_child(ids: list[int]) -> list[int]:
    return dr.block_hashes(ids)


def test_the_same_in_other_processes(frontend: Frontend) -> None:
    ids = frontend.prepare("chat", conversation(6)).prompt_ids
    expected = ids.block_hashes()
    # A fresh interpreter (its own hash seed), and a spawned worker given the ids by pickle.
    code = "import sys, json, deepseek_recipe as dr; print(json.dumps(dr.block_hashes(json.load(sys.stdin))))"
    child = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(ids.tolist()),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert json.loads(child.stdout) == expected
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(_hashes_in_a_child, ids.tolist()).result(timeout=60) == expected
        assert pool.submit(TokenIds.block_hashes, ids).result(timeout=60) == expected


def test_the_same_after_pickling(frontend: Frontend, tokenizer: dr.Tokenizer) -> None:
    prepared = frontend.prepare("chat", conversation(4))
    ids = prepared.prompt_ids
    copy = pickle.loads(pickle.dumps(ids))
    assert isinstance(copy, TokenIds) and copy == ids
    assert copy.block_hashes() == ids.block_hashes()
    # A pickled tokenizer and options make the same ids, so the same hashes.
    options = pickle.loads(pickle.dumps(frontend.options))
    again = Frontend(pickle.loads(pickle.dumps(tokenizer)), options=options)
    assert again.prepare("chat", conversation(4)).prompt_ids.block_hashes() == ids.block_hashes()


def _shared_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@pytest.fixture(scope="module")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)
