"""A stored conversation continued with ``previous_response_id``: the gateway's cost per turn on
SQLite and on PostgreSQL, against the same turns sent whole through Chat, in one run.

    python3 bench/stored_bench.py [--quick] [--no-record] [--project-python PATH] [--stores sqlite,postgresql]

A fake token-id engine (``/v1/completions``, in a process of its own) answers each prompt with
the next step of a ~300k-token agent conversation (``workloads.py``): reasoning, text and DSML
tool calls, as the model would write them. The gateway (``deepseek-recipe serve --backend
completions --store …``, another process) stores every turn; the client sends only each
step's tool results and ``previous_response_id``. Per turn:

- **added**: the gateway's time (the whole HTTP exchange) minus the engine's for the same
  prompt ids sent to it directly;
- **prepare + commit**: what the gateway itself logs for the turn (reading the request and any
  state it lacks, converting, rendering and encoding, then storing the turn);
- **relay added**: the same for the gateway bench's relay (``bench/gateway_bench.py``): the
  gateway's server and engine connection taking the turn's body in and sending its prompt ids
  out with no work between; the floor under **added** for a token-in HTTP engine; and where
  ``cc`` is found, for the same relay in C (``bench/relay_floor.c``), the floor under a request
  path in compiled code;
- **encode alone**: encoding the prompt's new text by itself (what the turn adds);
- the same conversation sent whole through Chat (``added``), for comparison.

Then the store alone: reading a turn back cold (its chain of requests and responses, and its
prompt ids), writing one turn, the driver's bare commit (:func:`commit_floor`: the least any
gateway storing the turn adds), and the store's size per 100k prompt tokens. PostgreSQL is
started by the bench itself (``tests/postgres_support.py``). Nothing here is imported by the
library.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
import record as R  # noqa: E402

MODEL = "DeepSeek-V4-Pro"
EOS = "<｜end▁of▁sentence｜>"


def serve_engine(port: int, script_path: str) -> None:
    """Answers each prompt with the script for its number of assistant turns (the
    conversation's next step, whichever protocol or call ids the prompt came with)."""
    import orjson
    import uvicorn

    loaded = json.loads(Path(script_path).read_text())
    assistant: int = loaded["assistant"]
    scripts: dict[str, list[int]] = loaded["scripts"]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        prompt = orjson.loads(body).get("prompt", [])
        ids = scripts.get(str(prompt.count(assistant)), scripts["default"])
        choice = {"index": 0, "text": "", "token_ids": ids, "logprobs": None, "finish_reason": "stop"}
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(ids), "total_tokens": len(prompt) + len(ids)}
        events = [{"id": "c", "object": "text_completion", "choices": [choice]}, {"choices": [], "usage": usage}]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for event in events:
            await send(
                {"type": "http.response.body", "body": b"data: " + orjson.dumps(event) + b"\n\n", "more_body": True}
            )
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--results", type=Path, default=R.RESULTS)
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--project-python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument("--serve-engine", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--script", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_engine:
        serve_engine(args.serve_engine, args.script)
        return 0
    if Path(sys.executable).absolute() != Path(args.project_python).absolute():
        return subprocess.call([args.project_python, __file__, *sys.argv[1:]])
    return run(args)


def run(args: argparse.Namespace) -> int:
    import deepseek_recipe as dr
    import gateway_bench as G
    import workloads
    from deepseek_recipe.backends.completions import CompletionsBackend
    from deepseek_recipe.frontend import Frontend

    frontend = Frontend()
    target = 60_000 if args.quick else 300_000
    rounds = 4 if args.quick else 8
    conv = workloads.make_conversation(20261201, target)
    first = len(conv.steps) - rounds - 1
    encoding = frontend.encoding(frontend.options.model_versions_by_name[MODEL])

    assistant = frontend.tokenizer.encode("<｜Assistant｜>")[0]

    def prompt_of(steps: int) -> tuple[str, int]:
        body = workloads.to_responses(workloads.truncated(conv, steps))
        prepared = frontend.prepare("responses", json.dumps(body, ensure_ascii=False))
        text = encoding.render_conversation(prepared.request.conversation).prompt
        return text, list(prepared.prompt_ids).count(assistant)

    # The engine's answer to a prompt of `steps` steps: step `steps` as the model writes it.
    scripts: dict[str, list[int]] = {"default": frontend.tokenizer.encode("Done.</think>Done." + EOS)}
    for steps in range(first, len(conv.steps)):
        text, turns = prompt_of(steps)
        longer = prompt_of(steps + 1)[0]
        assert longer.startswith(text), "reasoning is kept while tools are on: each prompt extends the last"
        output = longer[len(text) : longer.index(EOS, len(text))] + EOS
        scripts[str(turns)] = frontend.tokenizer.encode(output)

    command = f"python3 bench/stored_bench.py {' '.join(sys.argv[1:])}".rstrip()
    report = G.Report(R.new_record("stored", dt.datetime.now(dt.timezone.utc), command, args.quick))
    print(R.run_title(report.record) + "\n", flush=True)
    m = report.record["machine"]
    report.add(f"- command: `{command}`")
    report.add(
        f"- machine: {m['nproc']} CPUs, {m['cpu']}, {m['memory']} RAM; {m['os']}; load {m['load_start']} at start"
    )
    report.add(f"- ours: deepseek-recipe-rs {dr.__version__}, `{Path(dr.__file__).parent}`")
    report.add()
    backend = CompletionsBackend("http://unused")
    rows: dict[str, list[dict[str, Any]]] = {}
    storage: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        script_path = Path(tmp) / "scripts.json"
        script_path.write_text(json.dumps({"assistant": assistant, "scripts": scripts}))
        engine_port = G.free_port()
        engine_cmd = [sys.executable, __file__, "--serve-engine", str(engine_port), "--script", str(script_path)]
        relay_port, c_relay_port = G.free_port(), G.free_port()
        relay_cmd = G.relay_command(tmp, relay_port, engine_port)
        c_relay_cmd = G.c_relay_command(tmp, c_relay_port, engine_port)
        with (
            G.process(engine_cmd, engine_port),
            G.process(relay_cmd, relay_port),
            G.process(c_relay_cmd, c_relay_port) if c_relay_cmd is not None else contextlib.nullcontext(),
        ):
            for store_kind in args.stores.split(","):
                postgres = None
                if store_kind == "postgresql":
                    from tests import postgres_support

                    postgres = postgres_support.Postgres().init().start()
                    store_url = postgres.url()
                else:
                    store_url = f"sqlite://{tmp}/store.sqlite3"
                try:
                    log = Path(tmp) / f"gateway-{store_kind}.log"
                    relays = (relay_port, c_relay_port if c_relay_cmd is not None else None)
                    rows[store_kind] = run_store(
                        store_url, (engine_port, *relays), log, conv, first, rounds, frontend, backend, workloads
                    )
                    storage[store_kind] = measure_store(store_url, rows[store_kind][-1]["response_id"])
                finally:
                    if postgres is not None:
                        postgres.remove()
    report.figures["turn"] = rows
    report.figures["storage"] = storage
    report.start("turn")
    report.add(
        f"#### A ~{target // 1000}k-token agent conversation continued with previous_response_id ({rounds} turns)"
    )
    report.add()
    report.add(
        "| store | prompt tokens | new chars | added ms | relay added ms | C relay added ms | prepare ms "
        "| commit ms | encode alone ms | added ÷ alone | (prepare+commit) ÷ alone | Chat whole added ms |"
    )
    report.add("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    verdicts = []
    floors: dict[str, float] = {}
    for kind, kind_rows in rows.items():
        for row in kind_rows:
            own = row["prepare_ms"] + row["commit_ms"]
            c_relay = "n/a" if row.get("c_relay_added_ms") is None else f"{row['c_relay_added_ms']:.2f}"
            report.add(
                f"| {kind} | {row['prompt_tokens']:,} | {row['new_chars']:,} | {row['added_ms']:.2f} "
                f"| {row['relay_added_ms']:.2f} | {c_relay} | {row['prepare_ms']:.2f} | {row['commit_ms']:.2f} "
                f"| {row['alone_ms']:.2f} "
                f"| {row['added_ms'] / row['alone_ms']:.1f}x | {own / row['alone_ms']:.1f}x "
                f"| {row['chat_added_ms']:.2f} |"
            )
        added = statistics.median(r["added_ms"] for r in kind_rows)
        own = statistics.median(r["prepare_ms"] + r["commit_ms"] for r in kind_rows)
        alone = statistics.median(r["alone_ms"] for r in kind_rows)
        chat = statistics.median(r["chat_added_ms"] for r in kind_rows)
        floors[kind] = statistics.median(r["relay_added_ms"] for r in kind_rows)
        verdicts.append((kind, added, own, alone, chat))
    report.add()
    for kind, added, own, alone, chat in verdicts:
        report.add(
            f"{kind}: medians: added {added:.2f} ms ({added / alone:.1f}x encoding the new text alone, "
            f"{alone:.2f} ms); the gateway's own prepare + commit {own:.2f} ms ({own / alone:.1f}x); "
            f"the same turn sent whole through Chat adds {chat:.2f} ms. The relay (the same server and "
            f"engine connection passing the turn's body in and its ids out, no work) adds {floors[kind]:.2f} ms: "
            f"{floors[kind] / alone:.1f}x encoding the new text alone, before any work."
        )
    met = all(added <= 3 * alone for _, added, _, alone, _ in verdicts)
    report.record["targets"]["stored_turn"] = {
        "measured": "; ".join(
            f"{kind}: added {added:.2f} ms vs {alone:.2f} ms encoding the new text alone = {added / alone:.1f}x "
            f"(own prepare + commit {own / alone:.1f}x; Chat whole {chat:.1f} ms)"
            for kind, added, own, alone, chat in verdicts
        ),
        "met": met,
    }
    report.start("storage")
    report.add("#### The store alone (the last turn of the run)")
    report.add()
    report.add(
        "| store | read a turn back cold ms | write a turn ms | the driver's bare commit ms "
        "| size per 100k prompt tokens MB |"
    )
    report.add("|---|---:|---:|---:|---:|")
    for kind, figures in storage.items():
        report.add(
            f"| {kind} | {figures['read_ms']:.2f} | {figures['write_ms']:.2f} | {figures['commit_floor_ms']:.3f} "
            f"| {figures['mb_per_100k']:.2f} |"
        )
    report.add()
    for kind, _, _, alone, _ in verdicts:
        floor = storage[kind]["commit_floor_ms"]
        compiled = ""
        c_relays = [r["c_relay_added_ms"] for r in rows[kind]]
        if None not in c_relays:
            compiled = (
                f"; the relay in C (`bench/relay_floor.c`) {statistics.median(c_relays):.2f} ms (median; "
                f"{min(c_relays):.2f} to {max(c_relays):.2f} over the turns, the direct path's own spread)"
            )
        report.add(
            f"{kind}: the target's whole budget is {3 * alone:.2f} ms (3x encoding the new text alone); the "
            f"driver's bare commit of one small row, back to back in the bench's own thread, takes {floor:.3f} ms "
            f"({floor / (3 * alone) * 100:.0f}% of it); the relay {floors[kind]:.2f} ms{compiled}."
        )
    if not args.no_record:
        R.save(report.record, args.results)
    return 0


def run_store(
    store_url: str,
    ports: tuple[int, int, int | None],
    log: Path,
    conv: Any,
    first: int,
    rounds: int,
    frontend: Any,
    backend: Any,
    workloads: Any,
) -> list[dict[str, Any]]:
    import gateway_bench as G
    from deepseek_recipe.backends import GenerationRequest

    engine_port, relay_port, c_relay_port = ports
    port = G.free_port()
    command = [
        sys.executable, "-m", "deepseek_recipe", "serve", "--backend", "completions",
        "--backend-urls", f"http://127.0.0.1:{engine_port}", "--port", str(port), "--store", store_url,
        "--webui", "false", "--max-concurrent-requests", "1024",
    ]  # fmt: skip
    rows: list[dict[str, Any]] = []
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=sink)
        try:
            G.wait_ready(port, process)
            # The conversation's first steps, sent whole and stored.
            body = workloads.to_responses(workloads.truncated(conv, first))
            items: list[Any] = list(body["input"])
            response = post(port, "/v1/responses", body)
            encoding = frontend.encoding(frontend.options.model_versions_by_name[MODEL])
            start_body = json.dumps(body, ensure_ascii=False)
            previous_text = encoding.render_conversation(
                frontend.prepare("responses", start_body).request.conversation
            ).prompt
            for k in range(1, rounds + 1):
                step = conv.steps[first + k - 1]
                calls = [item for item in response["output"] if item["type"] == "function_call"]
                new = [
                    {"type": "function_call_output", "call_id": call["call_id"], "output": text}
                    for call, (_, text) in zip(calls, step.results)
                ]
                if step.user_after:
                    new.append({"role": "user", "content": [{"type": "input_text", "text": step.user_after}]})
                items += response["output"] + new
                turn = {k2: v for k2, v in body.items() if k2 != "input"}
                turn.update({"input": new, "previous_response_id": response["id"]})
                start = time.perf_counter()
                response = post(port, "/v1/responses", turn)
                via = time.perf_counter() - start  # serializing the body in json.dumps included
                whole = {k2: v for k2, v in body.items() if k2 != "input"}
                whole["input"] = items
                prepared = frontend.prepare("responses", json.dumps(whole, ensure_ascii=False))
                direct_body = backend.body(GenerationRequest.from_prepared(prepared, "bench"))
                # Direct and relay are repeatable: the median of a few keeps their noise out.
                direct_runs = G.asyncio.run(
                    G.latencies(engine_port, "/v1/completions", [direct_body] * G.REPEATS, gap=G.REPEAT_GAP)
                )
                direct = G.median_total(direct_runs)
                # The floor: the turn's body in and its ids out, through the gateway's server and
                # engine connection with no work between (bench/gateway_bench.py's relay).
                turn_bytes = json.dumps(turn, ensure_ascii=False).encode()
                name = G.relay_body(f"turn-{k}", direct_body)
                relay_runs = G.asyncio.run(
                    G.latencies(relay_port, "/v1/responses", [turn_bytes] * G.REPEATS, name, G.REPEAT_GAP)
                )
                relayed = G.median_total(relay_runs)
                c_relayed = None
                if c_relay_port is not None:
                    c_relayed = G.median_total(
                        G.asyncio.run(
                            G.latencies(c_relay_port, "/v1/responses", [turn_bytes] * G.REPEATS, name, G.REPEAT_GAP)
                        )
                    )
                chat_body = json.dumps(
                    workloads.to_chat(workloads.truncated(conv, first + k)), ensure_ascii=False
                ).encode()
                chat = G.asyncio.run(G.latencies(port, "/v1/chat/completions", [chat_body]))[0].total
                # The turn's new text: its prompt after what it shares with the last one.
                text = encoding.render_conversation(prepared.request.conversation).prompt
                length = len(prepared.prompt_ids)
                common = len(os.path.commonprefix([previous_text, text]))  # noqa: RUF071 (characters)
                previous_text = text
                fresh = text[common:] + f" {k}"
                # Text seen before first, so the tokenizer's tables are in the caches (as in
                # bench/gateway_bench.py): the new text's cost back to back.
                frontend.tokenizer.encode_ordinary(text[max(0, common - 4000) : common])
                t0 = time.perf_counter()
                frontend.tokenizer.encode_ordinary(fresh)
                alone = time.perf_counter() - t0
                rows.append(
                    {
                        "response_id": response["id"],
                        "prompt_tokens": length,
                        "new_chars": len(text) - common,
                        "added_ms": (via - direct) * 1e3,
                        "relay_added_ms": (relayed - direct) * 1e3,
                        "c_relay_added_ms": None if c_relayed is None else (c_relayed - direct) * 1e3,
                        "alone_ms": alone * 1e3,
                        "chat_added_ms": (chat - direct) * 1e3,
                    }
                )
        finally:
            process.terminate()
            process.wait(timeout=30)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    turns = [line for line in lines if line.get("protocol") == "responses"][-rounds:]
    for row, line in zip(rows, turns):
        row["prepare_ms"] = line["prepare_ms"] or 0.0
        row["commit_ms"] = line["commit_ms"] or 0.0
    return rows


_CONNECTIONS: dict[int, Any] = {}


def post(port: int, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST on a kept-alive connection (the standard library's client: its own cost is a small
    fraction of a millisecond, as the raw client's the Chat comparison uses)."""
    import http.client

    connection = _CONNECTIONS.get(port)
    if connection is None:
        connection = _CONNECTIONS[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    data = json.dumps(body, ensure_ascii=False).encode()
    connection.request("POST", path, data, {"content-type": "application/json"})
    response = connection.getresponse()
    raw = response.read()
    if response.status != 200:
        raise RuntimeError(f"{path} answered {response.status}: {raw[:300]!r}")
    value: dict[str, Any] = json.loads(raw)
    return value


def measure_store(store_url: str, response_id: str) -> dict[str, float]:
    """Cold read of the last turn, one turn written again, and the store's size."""
    import dataclasses

    import anyio

    from deepseek_recipe.gateway.store import open_store

    async def measure() -> dict[str, float]:
        store = open_store(store_url)
        assert store is not None
        await store.open()
        now = int(time.time())
        reads, writes = [], []
        record = None
        for _ in range(5):
            start = time.perf_counter()
            record = await store.get_response("", response_id, now)
            chain = await store.response_chain("", response_id, now)
            await store.prompt_chain("", response_id)
            reads.append(time.perf_counter() - start)
        assert record is not None and chain
        from deepseek_recipe.gateway.store import TurnWrite

        for k in range(5):
            copy = dataclasses.replace(record, id=f"{record.id}-copy{k}")
            start = time.perf_counter()
            await store.save_turn(TurnWrite(copy, None))
            writes.append(time.perf_counter() - start)
        tokens = len(record.prompt_tail) // 4 + record.prompt_keep
        floor = await anyio.to_thread.run_sync(commit_floor, store_url)
        size = await anyio.to_thread.run_sync(store_size, store_url)
        await store.close()
        return {
            "read_ms": statistics.median(reads) * 1e3,
            "write_ms": statistics.median(writes) * 1e3,
            "commit_floor_ms": floor,
            "mb_per_100k": size / 1e6 * 100_000 / max(tokens, 1),
        }

    return asyncio.run(measure())


def commit_floor(store_url: str, repeats: int = 41) -> float:
    """The least a durable write costs with this store's driver, in ms (median): one small row
    inserted and committed, back to back, on a connection of the bench's own (no pool, no
    thread hand-off; SQLite in WAL mode with ``synchronous = NORMAL``, as the store opens it).
    A stored turn commits at least once, so no gateway can add less than this for it."""
    table = "bench_commit_floor"
    times = []
    if store_url.startswith("sqlite://"):
        import sqlite3

        sqlite = sqlite3.connect(store_url.removeprefix("sqlite://"), isolation_level=None)
        sqlite.execute("PRAGMA journal_mode = WAL")
        sqlite.execute("PRAGMA synchronous = NORMAL")
        sqlite.execute(f"CREATE TABLE IF NOT EXISTS {table} (id INTEGER PRIMARY KEY, body BLOB)")
        for k in range(repeats):
            start = time.perf_counter()
            sqlite.execute("BEGIN")
            sqlite.execute(f"INSERT INTO {table} VALUES (?, ?)", (k, b"x" * 100))
            sqlite.execute("COMMIT")
            times.append(time.perf_counter() - start)
        sqlite.execute(f"DROP TABLE {table}")
        sqlite.close()
    else:
        import psycopg

        with psycopg.connect(store_url) as connection:
            connection.execute(f"CREATE TABLE IF NOT EXISTS {table} (id int PRIMARY KEY, body bytea)")
            connection.commit()
            for k in range(repeats):
                start = time.perf_counter()
                connection.execute(f"INSERT INTO {table} VALUES (%s, %s)", (k, b"x" * 100))
                connection.commit()
                times.append(time.perf_counter() - start)
            connection.execute(f"DROP TABLE {table}")
            connection.commit()
    return statistics.median(times) * 1e3


def store_size(store_url: str) -> int:
    if store_url.startswith("sqlite://"):
        import sqlite3

        path = store_url.removeprefix("sqlite://")
        with sqlite3.connect(path) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            # The copies written by measure_store are not part of the conversation.
            connection.execute("DELETE FROM responses WHERE id LIKE '%-copy%'")
        with sqlite3.connect(path) as connection:
            connection.execute("VACUUM")
        return Path(path).stat().st_size
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as connection:
        connection.execute("DELETE FROM responses WHERE id LIKE '%-copy%'")
        connection.execute("VACUUM FULL")
        row = connection.execute(
            "SELECT sum(pg_total_relation_size(c)) FROM unnest(ARRAY['responses', 'threads', "
            "'conversations', 'conversation_items']::regclass[]) c"
        ).fetchone()
        return int(row[0]) if row else 0


if __name__ == "__main__":
    sys.exit(main())
