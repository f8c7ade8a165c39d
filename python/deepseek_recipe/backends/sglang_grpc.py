"""SGLang's gRPC mode (``sglang serve --smg-grpc-mode``: the ``SglangScheduler`` service of
``sglang_scheduler.proto``), with token ids in and out as protobuf (what both gRPC engines
share: ``_grpc.py``). Needs the ``grpc`` extra.

Read in the servicer SGLang runs in that mode (``smg-grpc-servicer``), not observed (no SGLang
runs on the machines these tests run on):

- the proto's sampling fields are plain numbers whose zero the servicer takes as a value, not
  as "unset": temperature, ``top_p``, ``top_k`` and ``repetition_penalty`` are always sent,
  with SGLang's own defaults (1.0, 1.0, -1 for every token, 1.0) where the request has none;
- the proto has no seed: a request's ``seed`` is not sent (SGLang's gRPC gateway drops it
  too); the HTTP backend (``sglang``) sends it as ``sampling_seed``;
- log probabilities: ``return_logprob`` with ``top_logprobs_num`` alternatives per token (a
  plain top k), none of the prompt's (``logprob_start_len`` -1);
- a stream's chunks carry each choice's new ids, then a ``complete`` per choice repeats the
  last chunk's, as vLLM's does; cancelling the call aborts the request in the scheduler.
"""

from __future__ import annotations

from deepseek_recipe.backends import GenerationRequest
from deepseek_recipe.backends._grpc import GrpcBackend

try:
    from smg_grpc_proto import sglang_scheduler_pb2 as pb
except ImportError:  # pragma: no cover (the extra is installed wherever the tests run)
    raise ImportError("the sglang-grpc backend needs the grpc extra: pip install 'deepseek-recipe-rs[grpc]'") from None

#: SGLang's sampling defaults, sent where a request sets nothing (see the module doc).
DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_P = 1.0
ALL_TOKENS = -1
NO_PENALTY = 1.0


class SglangGrpcBackend(GrpcBackend):
    """``url``: ``grpc://host:port`` (port 30000, SGLang's, when none is named),
    ``grpcs://host:port`` or ``unix:/path``."""

    kind = "sglang-grpc"
    service = "/sglang.grpc.scheduler.SglangScheduler/"
    messages = pb
    default_port = 30000

    def body(self, request: GenerationRequest) -> bytes:
        """The serialized ``GenerateRequest`` for ``request``."""
        sampling = request.sampling
        params = pb.SamplingParams(
            temperature=DEFAULT_TEMPERATURE if sampling.temperature is None else sampling.temperature,
            top_p=DEFAULT_TOP_P if sampling.top_p is None else sampling.top_p,
            top_k=ALL_TOKENS,
            repetition_penalty=NO_PENALTY,
            max_new_tokens=sampling.max_tokens,
            stop_token_ids=list(request.stop_token_ids),
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
            n=max(sampling.n, 1),
        )
        constraint = request.output_constraint
        if constraint is not None and constraint.kind == "json":
            params.json_schema = constraint.schema or '{"type": "object"}'
        elif constraint is not None and constraint.kind == "regex":
            params.regex = constraint.schema or ""
        head = pb.GenerateRequest(request_id=request.request_id, sampling_params=params, stream=True)
        if sampling.logprobs:
            head.return_logprob = True
            head.top_logprobs_num = sampling.top_logprobs or 0
            head.logprob_start_len = -1
        return self._with_ids(head, request)
