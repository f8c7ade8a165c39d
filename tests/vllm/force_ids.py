"""A test-only vLLM logits processor: the model writes the output a test scripted for its prompt.

Loaded into vLLM with ``--logits-processors force_ids:ForceIds`` (this folder on
``PYTHONPATH``) and ``FORCE_IDS_DIR`` in the environment. For every request it names the prompt
by the SHA-256 of its ids (``,``-joined decimals), records the ids it was given in
``FORCE_IDS_DIR/seen/<name>`` (the exact ids vLLM feeds the model), and, if the test wrote a
script ``FORCE_IDS_DIR/<name>.json`` (a list of token ids), leaves only the next scripted id
possible at each step and repeats the last one once the script is spent (scripts end with the
end of sentence). Prompts without a script get ``FORCE_IDS_DIR/default.json`` where that exists
(a run that only wants prompts writes the end of sentence there), else are left alone (random
output).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import Any

import torch
from vllm.v1.sample.logits_processor import AdapterLogitsProcessor


def prompt_name(ids: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()


class ForceIds(AdapterLogitsProcessor):
    def is_argmax_invariant(self) -> bool:
        return False

    def new_req_logits_processor(self, params: Any) -> Callable[[list[int], list[int], torch.Tensor], torch.Tensor]:
        folder = os.environ["FORCE_IDS_DIR"]
        script: list[int] = []
        looked = False

        def apply(prompt_ids: list[int], output_ids: list[int], logits: torch.Tensor) -> torch.Tensor:
            nonlocal looked
            if not looked:
                looked = True
                name = prompt_name(list(prompt_ids))
                seen = os.path.join(folder, "seen")
                os.makedirs(seen, exist_ok=True)
                with open(os.path.join(seen, name), "w") as f:
                    f.write(",".join(map(str, prompt_ids)))
                for path in (os.path.join(folder, name + ".json"), os.path.join(folder, "default.json")):
                    if os.path.exists(path):
                        with open(path) as f:
                            script.extend(json.load(f))
                        break
            if not script:
                return logits
            target = script[min(len(output_ids), len(script) - 1)]
            logits.fill_(float("-inf"))
            logits[target] = 0.0
            return logits

        return apply
