"""Prefix-cache routing simulator: a generated multi-agent workload replayed against N
simulated engine replicas, each with an LRU cache of KV blocks, under four routing policies.

    python bench/route_sim.py                 # 4, 16 and 64 replicas, about 10 minutes on 2 cores
    python bench/route_sim.py --quick         # small and short, a few seconds
    python bench/route_sim.py --no-record     # print only (by default the run is recorded: a JSON
                                              # file in bench/results/, bench/results.md rewritten)

It drives the library's real routing code: prompts are exact id arrays, hashed by
``deepseek_recipe.block_hashes`` (the Rust core), and ``round_robin``, ``least_loaded`` and
``prefix`` are ``deepseek_recipe.routing``'s own routers, one instance per simulated gateway
process (each sees only its own requests in flight, as real ones do; a session's turns enter
through gateways chosen at random). ``oracle`` knows every replica's cache and every request
in flight: it sends each request to the replica holding its longest cached prefix among
those within the same load bound as the router.

The workload (seeded, see ``--help`` for the knobs): agent types, each with its own system
prompt and tools (popular types more often); sessions of one type arrive at random and each
is a growing conversation: a first user message, then turns of model output (reasoning and a
tool call) and a tool result, sometimes a new user message, which drops earlier reasoning
from the prompt as DeepSeek's template does; a session ends after a random number of turns.
A request takes ``overhead + uncached prompt tokens / prefill rate + output tokens / decode
rate`` seconds (a hit saves prefill); the next turn follows after a think time.

Reported, over requests that arrive after the warm-up:

- **hit rate**: prompt tokens found in the chosen replica's cache (the longest run of
  leading blocks it holds) ÷ all prompt tokens;
- **÷ oracle**: the policy's hit rate ÷ the oracle's;
- **imbalance**: the busiest replica's busy time (request-seconds it served) ÷ the mean
  over replicas; **requests**: the same for request counts;
- **peak**: the mean, over arrivals, of the most loaded replica's requests in flight ÷ the
  mean in flight.
"""

from __future__ import annotations

import argparse
import datetime as dt
import heapq
import random
import sys
import time
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from deepseek_recipe.routing import LeastLoaded, PrefixRouter, PromptBlocks, RoundRobin, Router, load_share

BOS, USER, ASSISTANT, TOOL = 0, 1, 2, 3  # the template tokens of the generated prompts
POLICIES = ("round_robin", "least_loaded", "prefix", "oracle")
BENCH = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Knobs:
    replicas: int
    gateways: int = 4
    seconds: float = 900.0  # simulated time during which sessions start
    warmup: float = 300.0  # requests arriving before this are not counted
    load_per_replica: float = 12.0  # mean requests in flight per replica (sets the arrival rate)
    cache_tokens: int = 1_048_576  # each replica's KV cache
    block_size: int = 128
    agent_types: int = 8
    mean_turns: float = 12.0
    user_turn_share: float = 0.15  # turns that bring a new user message (dropping old reasoning)
    prefill_rate: float = 20_000.0  # uncached prompt tokens per second (one request)
    decode_rate: float = 40.0  # output tokens per second (one request)
    overhead: float = 0.05
    tool_think: float = 2.0  # mean seconds between a tool call and its result's request
    user_think: float = 20.0  # mean seconds before a new user message
    load_factor: float = 1.25
    seed: int = 21


@dataclass
class Turn:
    output: int  # output tokens (reasoning + call), appended to the next prompt
    reasoning: int  # of which reasoning (dropped at the next user message)
    user: bool  # the next prompt brings a new user message (else a tool result)
    added: int  # tokens of that user message or tool result
    think: float  # seconds before the next request


@dataclass
class Session:
    index: int
    agent: int
    start: float
    first_message: int
    turns: list[Turn]
    gateways: list[int]


@dataclass
class Agent:
    head: array  # BOS, system prompt, tools (shared by every session of the type)


def make_workload(k: Knobs) -> tuple[list[Agent], list[Session]]:
    rng = random.Random(k.seed)
    agents = []
    for a in range(k.agent_types):
        system, tools = rng.randint(1_500, 6_000), rng.randint(1_000, 8_000)
        agents.append(Agent(array("I", [BOS]) + _ids(random.Random(f"agent{a}"), system + tools)))
    weights = [1 / (a + 1) for a in range(k.agent_types)]
    # Arrival rate from Little's law: sessions in flight = load x replicas / share in flight.
    turn_time = k.overhead + 700 / k.decode_rate + 3_000 / k.prefill_rate
    mean_think = k.tool_think * (1 - k.user_turn_share) + k.user_think * k.user_turn_share
    session_time = k.mean_turns * (turn_time + mean_think)
    rate = k.load_per_replica * k.replicas / turn_time * (turn_time + mean_think) / session_time
    sessions, now = [], 0.0
    while True:
        now += rng.expovariate(rate)
        if now >= k.seconds:
            break
        count = min(1 + int(rng.expovariate(1 / (k.mean_turns - 1))), 80)
        turns = []
        for _ in range(count):
            reasoning = rng.randint(50, 800)
            user = rng.random() < k.user_turn_share
            added = rng.randint(20, 600) if user else min(int(rng.lognormvariate(6.8, 1.0)), 12_000)
            think = rng.expovariate(1 / (k.user_think if user else k.tool_think))
            turns.append(Turn(reasoning + rng.randint(30, 400), reasoning, user, added, think))
        gateways = [rng.randrange(k.gateways) for _ in turns]
        agent = rng.choices(range(k.agent_types), weights)[0]
        sessions.append(Session(len(sessions), agent, now, rng.randint(50, 2_000), turns, gateways))
    return agents, sessions


def _ids(rng: random.Random, count: int) -> array:
    """``count`` random content ids (none of them a template token)."""
    data = bytearray(rng.randbytes(4 * count))
    data[1::4] = data[1::4].translate(_SET_LOW_BIT)  # every id >= 256
    return array("I", data)


_SET_LOW_BIT = bytes(b | 1 for b in range(256))


class Conversation:
    """A session's prompt as it grows: segments of ids, reasoning ones dropped at a user turn."""

    def __init__(self, agent: Agent, session: Session) -> None:
        self.rng = random.Random(f"session{session.index}")
        first = array("I", [USER]) + _ids(self.rng, session.first_message) + array("I", [ASSISTANT])
        self.segments: list[tuple[array, bool]] = [(agent.head, False), (first, False)]

    def prompt(self) -> array:
        ids = array("I")
        for segment, _ in self.segments:
            ids += segment
        return ids

    def advance(self, turn: Turn) -> None:
        """The model's output for the last prompt, then the next user message or tool result."""
        self.segments.append((_ids(self.rng, turn.reasoning), True))
        self.segments.append((_ids(self.rng, turn.output - turn.reasoning), False))
        if turn.user:
            self.segments = [(s, dropped) for s, dropped in self.segments if not dropped]
            self.segments.append((array("I", [USER]) + _ids(self.rng, turn.added) + array("I", [ASSISTANT]), False))
        else:
            self.segments.append((array("I", [TOOL]) + _ids(self.rng, turn.added) + array("I", [ASSISTANT]), False))


class Replica:
    """An engine's prefix cache: an LRU of block hashes, evicting a prompt's last blocks first
    (as vLLM frees them), and the requests it is serving."""

    def __init__(self, capacity_blocks: int) -> None:
        self.capacity = capacity_blocks
        self.blocks: OrderedDict[int, None] = OrderedDict()
        self.in_flight = 0
        self.busy = 0.0
        self.requests = 0

    def cached_blocks(self, hashes: Sequence[int]) -> int:
        blocks, hit = self.blocks, 0
        for h in hashes:
            if h not in blocks:
                break
            hit += 1
        return hit

    def serve(self, hashes: Sequence[int]) -> int:
        """Leading blocks found cached; then every block of the prompt is cached."""
        hit = self.cached_blocks(hashes)
        blocks = self.blocks
        for h in reversed(hashes):  # the first blocks end up the most recently used
            blocks[h] = None
            blocks.move_to_end(h)
        while len(blocks) > self.capacity:
            blocks.popitem(last=False)
        return hit


@dataclass
class Result:
    policy: str
    replicas: int
    hit_rate: float
    imbalance: float
    request_imbalance: float
    peak: float
    requests: int
    seconds: float  # wall time of the run
    prompt_tokens: int = 0
    extra: dict[str, float] = field(default_factory=dict)


def simulate(policy: str, k: Knobs, agents: list[Agent], sessions: list[Session]) -> Result:
    started = time.perf_counter()
    names = [f"http://replica-{r}:8000" for r in range(k.replicas)]
    replicas = [Replica(k.cache_tokens // k.block_size) for _ in range(k.replicas)]
    gateway_loads = [[0] * k.replicas for _ in range(k.gateways)]
    routers: list[Router] = []
    for _ in range(k.gateways):
        if policy == "round_robin":
            routers.append(RoundRobin())
        elif policy == "least_loaded":
            routers.append(LeastLoaded())
        else:
            routers.append(PrefixRouter(names, load_factor=k.load_factor))
    oracle_ranker = PrefixRouter(names, load_factor=k.load_factor, memory_blocks=0)
    everyone = list(range(k.replicas))

    # Events: (time, order, kind, data); kind 0 = a request finishes, 1 = a request arrives.
    events: list[tuple[float, int, int, tuple[int, ...]]] = []
    order = 0
    for s in sessions:
        events.append((s.start, order, 1, (s.index, 0)))
        order += 1
    heapq.heapify(events)
    conversations: dict[int, Conversation] = {}
    hit_tokens = prompt_tokens = counted = 0
    peak_sum = 0.0
    while events:
        now, _, kind, data = heapq.heappop(events)
        if kind == 0:
            replica, gateway = data
            replicas[replica].in_flight -= 1
            gateway_loads[gateway][replica] -= 1
            continue
        index, turn_number = data
        session = sessions[index]
        conversation = conversations.get(index)
        if conversation is None:
            conversation = conversations[index] = Conversation(agents[session.agent], session)
        ids = conversation.prompt()
        gateway = session.gateways[turn_number]
        blocks = PromptBlocks.of(ids, block_size=k.block_size, head_token=ASSISTANT)
        if policy == "oracle":
            loads = [r.in_flight for r in replicas]
            share = load_share(k.load_factor, sum(loads), k.replicas)
            ranked = oracle_ranker.rendezvous(blocks.key, everyone)
            fits = [i for i in ranked if loads[i] <= share]
            chosen = max(fits, key=lambda i: replicas[i].cached_blocks(blocks.hashes))  # first best: rendezvous
        else:
            router = routers[gateway]
            chosen = router.route(blocks, gateway_loads[gateway], everyone).order[0]
            router.routed(blocks, chosen)
        replica = replicas[chosen]
        hit = replica.serve(blocks.hashes) * k.block_size
        turn = session.turns[turn_number]
        duration = k.overhead + (len(ids) - hit) / k.prefill_rate + turn.output / k.decode_rate
        if now >= k.warmup:
            counted += 1
            hit_tokens += hit
            prompt_tokens += len(ids)
            replica.busy += duration
            replica.requests += 1
            in_flight = [r.in_flight for r in replicas]
            mean = (sum(in_flight) + 1) / k.replicas
            peak_sum += max(in_flight[i] + (i == chosen) for i in everyone) / mean
        replica.in_flight += 1
        gateway_loads[gateway][chosen] += 1
        end = now + duration
        heapq.heappush(events, (end, order, 0, (chosen, gateway)))
        order += 1
        if turn_number + 1 < len(session.turns):
            conversation.advance(turn)
            heapq.heappush(events, (end + turn.think, order, 1, (index, turn_number + 1)))
            order += 1
        else:
            del conversations[index]
    busy = [r.busy for r in replicas]
    served = [r.requests for r in replicas]
    return Result(
        policy=policy,
        replicas=k.replicas,
        hit_rate=hit_tokens / max(prompt_tokens, 1),
        imbalance=max(busy) / max(sum(busy) / len(busy), 1e-9),
        request_imbalance=max(served) / max(sum(served) / len(served), 1e-9),
        peak=peak_sum / max(counted, 1),
        requests=counted,
        seconds=time.perf_counter() - started,
        prompt_tokens=prompt_tokens,
    )


def table(results: list[Result]) -> str:
    oracle = {r.replicas: r.hit_rate for r in results if r.policy == "oracle"}
    lines = [
        "| replicas | policy | hit rate | ÷ oracle | imbalance | requests | peak | requests counted | run s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        ratio = r.hit_rate / oracle[r.replicas] if oracle.get(r.replicas) else float("nan")
        lines.append(
            f"| {r.replicas} | {r.policy} | {r.hit_rate:.1%} | {ratio:.3f} | {r.imbalance:.2f}x | "
            f"{r.request_imbalance:.2f}x | {r.peak:.2f}x | {r.requests} | {r.seconds:.1f} |"
        )
    return "\n".join(lines)


def goals(
    results: list[Result], load_goal: float = 1.3, hit_goal: float = 0.9
) -> list[tuple[Result, Result, float, bool]]:
    """Per replica count: the router, the oracle, the router's share of the oracle's hit rate,
    and whether it is within 10% of the oracle's with load imbalance under 1.3x."""
    out = []
    for n in sorted({r.replicas for r in results}):
        by = {r.policy: r for r in results if r.replicas == n}
        router, oracle = by.get("prefix"), by.get("oracle")
        if router is None or oracle is None:
            continue
        ratio = router.hit_rate / oracle.hit_rate if oracle.hit_rate else 0.0
        out.append((router, oracle, ratio, ratio >= hit_goal and router.imbalance < load_goal))
    return out


def verdict(results: list[Result], load_goal: float = 1.3, hit_goal: float = 0.9) -> list[str]:
    """One line per replica count: is the router within 10% of the oracle, under 1.3x?"""
    return [
        f"{router.replicas} replicas: router hit rate {router.hit_rate:.1%} = {ratio:.1%} of the oracle's "
        f"({oracle.hit_rate:.1%}), imbalance {router.imbalance:.2f}x: goal {'met' if met else 'MISSED'}"
        for router, oracle, ratio, met in goals(results, load_goal, hit_goal)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", default="4,16,64", help="comma-separated replica counts")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--quick", action="store_true", help="a short run (4 and 8 replicas, 240 s simulated)")
    parser.add_argument("--gateways", type=int, default=Knobs.gateways, help="gateway processes (no shared state)")
    parser.add_argument("--seconds", type=float, default=Knobs.seconds)
    parser.add_argument("--warmup", type=float, default=Knobs.warmup)
    parser.add_argument("--load", type=float, default=Knobs.load_per_replica, help="mean in flight per replica")
    parser.add_argument("--cache-tokens", type=int, default=Knobs.cache_tokens, help="KV cache per replica")
    parser.add_argument("--block-size", type=int, default=Knobs.block_size)
    parser.add_argument("--load-factor", type=float, default=Knobs.load_factor)
    parser.add_argument("--seed", type=int, default=Knobs.seed)
    parser.add_argument("--no-record", action="store_true", help="print only: no record, bench/results.md untouched")
    parser.add_argument(
        "--results",
        type=Path,
        default=BENCH / "results.md",
        help="the results file to rewrite (records go to results/ beside it)",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(BENCH))
    import record as R

    command = ("python bench/route_sim.py " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    record = R.new_record("route_sim", dt.datetime.now(dt.timezone.utc), command, args.quick)
    counts = [4, 8] if args.quick else [int(n) for n in args.replicas.split(",")]
    seconds, warmup = (240.0, 80.0) if args.quick else (args.seconds, args.warmup)
    policies = [p for p in args.policies.split(",") if p]
    results = []
    for n in counts:
        knobs = Knobs(
            replicas=n,
            gateways=args.gateways,
            seconds=seconds,
            warmup=warmup,
            load_per_replica=args.load,
            cache_tokens=args.cache_tokens,
            block_size=args.block_size,
            load_factor=args.load_factor,
            seed=args.seed,
        )
        agents, sessions = make_workload(knobs)
        print(f"# {n} replicas: {len(sessions)} sessions", file=sys.stderr, flush=True)
        for policy in policies:
            result = simulate(policy, knobs, agents, sessions)
            print(f"#   {policy}: {result.hit_rate:.1%} hit, {result.imbalance:.2f}x", file=sys.stderr, flush=True)
            results.append(result)
    report = [table(results), "", *verdict(results)]
    m = record["machine"]
    m["load_end"] = R.loadavg()
    record["header"] = [
        f"- command: `{command}`",
        f"- machine: {m['nproc']} CPUs, {m['cpu']}, {m['memory']} RAM; {m['os']}; "
        f"load average {m['load_start']} at start, {m['load_end']} at end",
    ]
    record["sections"]["table"] = report
    record["figures"] = {
        "knobs": {k: v for k, v in asdict(knobs).items() if k != "replicas"},
        "results": [asdict(r) for r in results],
    }
    met = goals(results)
    if met:
        record["targets"]["routing"] = {
            "measured": ", ".join(str(router.replicas) for router, _, _, _ in met)
            + " replicas: "
            + ", ".join(f"{ratio:.1%}" for _, _, ratio, _ in met)
            + " of the oracle's hit rate; imbalance "
            + ", ".join(f"{router.imbalance:.2f}x" for router, _, _, _ in met),
            "met": all(ok for _, _, _, ok in met),
        }
    print(R.render_run(record))
    if not args.no_record:
        R.save(record, args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
