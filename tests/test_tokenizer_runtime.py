"""How the tokenizer behaves as a process resource: one thread, shared int objects, ids
beyond the shared range."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import deepseek_recipe as dr


def test_one_thread_loads_and_encodes_without_waiting_on_itself() -> None:
    """With one rayon thread (a one-CPU container), loading builds its tables on threads
    of its own: an earlier design deadlocked there. A long text exercises the
    cut-and-parallel path too."""
    code = (
        "import deepseek_recipe as dr\n"
        "t = dr.default_tokenizer()\n"
        "ids = t.encode('hello world, ' * 20000 + '中文テキスト')\n"
        "print(len(ids))\n"
    )
    env = {**os.environ, "RAYON_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 20000


def test_lists_share_int_objects_and_stay_independent(tokenizer: dr.Tokenizer) -> None:
    first = tokenizer.encode("parallel parallel")
    second = tokenizer.encode("parallel")
    assert first[0] == second[0] and first[0] > 256  # not one of CPython's cached small ints
    assert first[0] is second[0]  # one shared object per id
    first[0] = -1  # a list is the caller's own
    assert tokenizer.encode("parallel") == second


def test_ids_beyond_the_shared_range_are_plain_ints() -> None:
    """A tokenizer.json whose ids are larger than the table of shared ints (2**18)."""
    big = 1 << 20
    spec: dict[str, object] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hello": big, "world": 7}, "unk_token": "[UNK]"},
    }
    tokenizer = dr.Tokenizer.from_str(json.dumps(spec))
    assert tokenizer.encode("hello world hello") == [big, 7, big]
