"""A StreamProcessor shared by threads serializes their calls, as the reference does (it
raised "Already borrowed" here once): every push from every thread is processed, none fails."""

from __future__ import annotations

import json
import threading

import deepseek_recipe as dr


def test_pushes_from_several_threads_are_serialized(tokenizer: dr.Tokenizer) -> None:
    body = {
        "model": "DeepSeek-V4.1-Flash",
        "messages": [{"role": "user", "content": "hi"}],
        "thinking": {"type": "disabled"},
    }
    converted = dr.ChatCompletionRequest(body).convert(dr.ConversionOptions())
    processor = dr.StreamProcessor(
        dr.ChatCompletionRequest.chunk_generator(converted, "r", "m"), converted.parsing_options, tokenizer
    )
    processor.push(dr.InferenceChunk.ready())
    ids = tokenizer.encode("hello world " * 5000)
    chunk = dr.InferenceChunk.tokens(ids)
    errors: list[BaseException] = []
    texts: list[str] = []

    def pusher() -> None:
        try:
            for _ in range(4):
                for event in processor.push(chunk):
                    texts.append(json.loads(event.to_json())["choices"][0]["delta"]["content"])
        except BaseException as error:  # any failure, recorded for the main thread
            errors.append(error)

    def watcher() -> None:
        try:
            for _ in range(2000):
                _ = processor.finished
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=pusher) for _ in range(4)] + [threading.Thread(target=watcher)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert texts == ["hello world " * 5000] * 16
    final = json.loads(processor.finish()[-1].to_json())
    assert final["usage"]["completion_tokens"] == 16 * len(ids)
