"""vLLM's gRPC entrypoint (``vllm serve --grpc``: the ``VllmEngine`` service of
``vllm_engine.proto``), with token ids in and out as protobuf (what both gRPC engines share:
``_grpc.py``). Needs the ``grpc`` extra.
"""

from __future__ import annotations

from deepseek_recipe.backends import GenerationRequest
from deepseek_recipe.backends._grpc import GrpcBackend

try:
    from smg_grpc_proto import vllm_engine_pb2 as pb
except ImportError:  # pragma: no cover (the extra is installed wherever the tests run)
    raise ImportError("the vllm-grpc backend needs the grpc extra: pip install 'deepseek-recipe-rs[grpc]'") from None

#: vLLM's default ``--max-logprobs``: the most alternatives a request may ask for.
_MAX_LOGPROBS = 20
_INT32 = 1 << 32


class VllmGrpcBackend(GrpcBackend):
    """``url``: ``grpc://host:port`` (port 50051 when none is named), ``grpcs://host:port`` or
    ``unix:/path``."""

    kind = "vllm-grpc"
    service = "/vllm.grpc.engine.VllmEngine/"
    messages = pb
    default_port = 50051

    def body(self, request: GenerationRequest) -> bytes:
        """The serialized ``GenerateRequest`` for ``request``."""
        sampling = request.sampling
        params = pb.SamplingParams(
            max_tokens=sampling.max_tokens,
            stop_token_ids=list(request.stop_token_ids),
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
            n=max(sampling.n, 1),
        )
        if sampling.temperature is not None:
            params.temperature = sampling.temperature
        if sampling.top_p is not None:
            params.top_p = sampling.top_p
        if sampling.seed is not None:
            params.seed = int32_seed(sampling.seed)
        if sampling.logprobs:
            params.logprobs = logprobs_to_ask(sampling.top_logprobs or 0)
        constraint = request.output_constraint
        if constraint is not None and constraint.kind == "json":
            if constraint.schema:
                params.json_schema = constraint.schema
            else:
                params.json_object = True
        elif constraint is not None and constraint.kind == "regex":
            params.regex = constraint.schema or ""
        head = pb.GenerateRequest(request_id=request.request_id, sampling_params=params, stream=True)
        return self._with_ids(head, request)


def int32_seed(seed: int) -> int:
    """``seed`` as the proto's ``int32``: its low 32 bits, signed (the same seed always maps to
    the same value; seeds beyond 32 bits that share their low bits share it)."""
    low = seed % _INT32
    return low - _INT32 if low >= _INT32 // 2 else low


def logprobs_to_ask(top: int) -> int:
    """How many alternatives to ask vLLM's servicer for, to return ``top`` of them. It keeps the
    first ``logprobs`` entries of vLLM's per-token dict, whose first is the sampled token
    wherever it ranks: one more (within ``--max-logprobs``) holds the true top ``top``."""
    return min(top + 1, _MAX_LOGPROBS) if top else 0
