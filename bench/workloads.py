"""Deterministic, seeded workloads for the tokenization benchmark (standard library only).

Nothing is downloaded: every text is generated from a seed, so two runs with the same
sizes measure the same bytes. The text mixes the things that stress a byte-level BPE
and its pre-tokenizer: English prose, code, JSON, CJK, emoji (with ZWJ sequences and
skin tones), digit runs, whitespace runs, and spellings that look like special tokens
(`<｜User｜>`, `</think>`, `｜DSML｜`, near misses) which must be encoded as plain text.

An agent conversation is generated once in a protocol-neutral form (system prompt,
tools, user turns, assistant steps with reasoning, text and tool calls, tool results)
and then expressed as an OpenAI Chat Completions, OpenAI Responses or Anthropic
Messages request body (shapes as in the reference behaviour spec, sections 4 to 6).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

MODEL = "DeepSeek-V4-Pro"
PROTOCOLS = ("chat", "responses", "messages")

# Rough bytes per token of the mixed text below, measured with the DeepSeek V4
# tokenizer; only used to aim at a token count (the exact count is printed).
BYTES_PER_TOKEN = 3.9

_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "they",
    "you",
    "were",
    "her",
    "she",
    "there",
    "been",
    "one",
    "all",
    "we",
    "their",
    "has",
    "would",
    "when",
    "if",
    "so",
    "no",
    "will",
    "can",
    "more",
    "about",
    "said",
    "out",
    "up",
    "them",
    "some",
    "could",
    "what",
    "into",
    "than",
    "other",
    "time",
    "only",
    "new",
    "two",
    "may",
    "first",
    "then",
    "do",
    "any",
    "like",
    "my",
    "now",
    "over",
    "such",
    "our",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "how",
    "too",
    "little",
    "state",
    "good",
    "very",
    "make",
    "world",
    "still",
    "own",
    "see",
    "men",
    "work",
    "long",
    "get",
    "here",
    "between",
    "both",
    "life",
    "being",
    "under",
    "never",
    "day",
    "same",
    "another",
    "know",
    "while",
    "last",
    "might",
    "us",
    "great",
    "old",
    "year",
    "off",
    "come",
    "since",
    "against",
    "go",
    "came",
    "right",
    "used",
    "take",
    "three",
    "tokenizer",
    "request",
    "response",
    "stream",
    "server",
    "gateway",
    "conversation",
    "message",
    "assistant",
    "model",
    "latency",
    "throughput",
    "parallel",
    "segment",
    "boundary",
    "merge",
    "vocabulary",
    "regular",
    "expression",
    "function",
    "argument",
    "parameter",
    "schema",
    "object",
    "array",
    "string",
    "integer",
    "boolean",
    "null",
    "value",
    "internationalization",
    "reproducibility",
    "counterintuitively",
    "antidisestablishmentarianism",
    "naïve",
    "café",
    "résumé",
    "façade",
    "jalapeño",
    "Zürich",
    "São",
    "Paulo",
    "Kraków",
    "Ελλάδα",
    "Москва",
    "Україна",
]

_SYLLABLES = (
    "ka",
    "lo",
    "ren",
    "qu",
    "ist",
    "ber",
    "mon",
    "tra",
    "vel",
    "xi",
    "zor",
    "pha",
    "ung",
    "ough",
    "eau",
    "sch",
    "tz",
    "ya",
    "dr",
    "ine",
    "ment",
    "ive",
    "ó",
    "ü",
    "ø",
    "ñ",
)

_CJK = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种"
    "面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本"
    "去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比"
    "或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总"
    "ひらがなカタカナのはをにでとがもへやからまでよりですますしたいるあるこのその日本語東京大阪"
    "한국어서울"
)

_EMOJI = (
    "😀",
    "😂",
    "🥲",
    "😍",
    "🤔",
    "🙃",
    "👍",
    "👍🏽",
    "👋🏿",
    "🎉",
    "🚀",
    "🔥",
    "✅",
    "❌",
    "⚠️",
    "❤️",
    "💡",
    "📦",
    "🧪",
    "🛠️",
    "👨‍👩‍👧‍👦",
    "🧑🏻‍💻",
    "🏳️‍🌈",
    "🇫🇷",
    "🇯🇵",
    "🇺🇸",
    "🐍",
    "🦀",
    "☕",
    "∑",
    "∞",
    "≠",
    "→",
    "⇒",
    "©",
    "™",
    "½",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "𝟙𝟚𝟛",
)

# Spellings that look like (or are) added tokens of the DeepSeek V4 vocabulary, plus near
# misses. In request text they must be encoded as plain text (behaviour spec section 9).
_LOOKALIKES = (
    "<｜User｜>",
    "<｜Assistant｜>",
    "<think>",
    "</think>",
    "｜DSML｜",
    "<｜DSML｜tool_calls>",
    "</｜DSML｜invoke>",
    "<｜begin▁of▁sentence｜>",
    "<｜end▁of▁sentence｜>",
    "<｜latest_reminder｜>",
    "<｜image｜>",
    "<｜ref｜>",
    "<dsml:",
    "</dsml:",
    "<|EOT|>",
    "<|endoftext|>",
    "<|im_start|>",
    "<｜Use",
    "User｜>",
    "<｜▁pad▁｜>",
    "<｜fim▁hole｜>",
    "< think >",
    "<THINK>",
    "<|User|>",
    "｜｜DSML｜｜",
    "<tool_result>",
    "</tool_result>",
)

_IDENTS = (
    "request",
    "tokens",
    "segment",
    "cache",
    "buffer",
    "offset",
    "index",
    "value",
    "result",
    "handler",
    "parser",
    "stream",
    "chunk",
    "config",
    "options",
    "payload",
    "client",
    "ctx",
    "merge_rank",
    "byte_pairs",
    "pre_tokenize",
    "render_prompt",
    "special_ranges",
    "ids",
)

_CODE_LINES = (
    "def {f}({a}, {b}=None):",
    "    if {a} is None or len({a}) == 0:",
    "        return []",
    "    for i, {b} in enumerate({a}):",
    "        {b}[i] = ({b}[i] << 8) | 0xFF  # mask",
    "    return {{'{a}': {a}, '{b}': {b}}}",
    "fn {f}(&mut self, {a}: &[u8]) -> Result<Vec<u32>, Error> {{",
    "    let mut {b} = Vec::with_capacity({a}.len() / 4);",
    "    for (i, &byte) in {a}.iter().enumerate() {{ {b}.push(byte as u32 + i as u32); }}",
    "    Ok({b})",
    "}}",
    "const {b} = await fetch(`/v1/{f}?id=${{{a}}}`).then((r) => r.json());",
    'if ({a} !== undefined && {b}.length > 0) {{ console.log("{f}", {a}); }}',
    "SELECT {a}, COUNT(*) AS n FROM {f} WHERE {b} > 42 GROUP BY {a} ORDER BY n DESC;",
    '#include <stdio.h>\nint main(void) {{ printf("%d\\n", {a}); return 0; }}',
    "\t\t{a}->{b} = ({f}_t *)malloc(sizeof({f}_t) * 16);",
    "    @property\n    def {f}(self) -> int:\n        return self._{a}",
    "$ cargo test -p {f} -- --nocapture 2>&1 | grep -E '^(test|error)'",
)


class TextGen:
    """Seeded generator of mixed text. `specials=False` leaves out look-alike spellings."""

    def __init__(self, seed: int, specials: bool = True) -> None:
        self.rng = random.Random(seed)
        self.specials = specials

    # -- one kind each -------------------------------------------------------------
    def prose(self, words: int) -> str:
        rng = self.rng
        out: list[str] = []
        sentence = 0
        for _ in range(words):
            # mostly common words, with a long tail of made-up ones (names, jargon, typos)
            # so that a tokenizer's word cache does not see only a small vocabulary
            w = rng.choice(_WORDS) if rng.random() < 0.85 else self.pseudo_word()
            if sentence == 0:
                w = w.capitalize()
            out.append(w)
            sentence += 1
            if sentence > 6 and rng.random() < 0.15:
                out[-1] += rng.choice((".", ".", ".", "?", "!", ";", ":", "...", ","))
                sentence = 0 if out[-1][-1] in ".?!" else sentence
        return " ".join(out) + "."

    def pseudo_word(self) -> str:
        rng = self.rng
        return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))

    def code(self, lines: int) -> str:
        rng = self.rng
        out = []
        for _ in range(lines):
            out.append(
                rng.choice(_CODE_LINES).format(f=rng.choice(_IDENTS), a=rng.choice(_IDENTS), b=rng.choice(_IDENTS))
            )
        return "```\n" + "\n".join(out) + "\n```"

    def json_value(self, depth: int = 0) -> Any:
        rng = self.rng
        r = rng.random()
        if depth < 3 and r < 0.3:
            return {f"{rng.choice(_IDENTS)}_{i}": self.json_value(depth + 1) for i in range(rng.randint(1, 5))}
        if depth < 3 and r < 0.45:
            return [self.json_value(depth + 1) for _ in range(rng.randint(0, 4))]
        if r < 0.6:
            return rng.randint(-(10**9), 10**12)
        if r < 0.7:
            return round(rng.uniform(-1000, 1000), rng.randint(0, 6))
        if r < 0.75:
            return rng.choice((True, False, None))
        return self.short()

    def json_text(self) -> str:
        v = {"id": self.rng.randint(1, 10**6), "data": self.json_value()}
        if self.rng.random() < 0.5:
            return json.dumps(v, ensure_ascii=False, indent=2)
        return json.dumps(v, ensure_ascii=self.rng.random() < 0.3)

    def cjk(self, chars: int) -> str:
        rng = self.rng
        s = "".join(rng.choice(_CJK) for _ in range(chars))
        # punctuation inside runs
        return s.replace(s[len(s) // 2 : len(s) // 2 + 1], "，") + "。"

    def emoji(self, n: int) -> str:
        return " ".join(self.rng.choice(_EMOJI) for _ in range(n))

    def digits(self) -> str:
        rng = self.rng
        return rng.choice(
            (
                str(rng.randint(0, 10**30)),
                f"{rng.uniform(-1e6, 1e6):.6f}",
                f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
                f"+1 ({rng.randint(200, 999)}) {rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
                "0x" + "".join(rng.choice("0123456789abcdef") for _ in range(rng.randint(4, 40))),
                " ".join(str(rng.randint(0, 999)) for _ in range(rng.randint(2, 12))),
                "١٢٣٤٥ ٦٧٨ ９８７６ ½ ²³",
            )
        )

    def whitespace(self) -> str:
        rng = self.rng
        return rng.choice(
            (
                " " * rng.randint(2, 40),
                "\t" * rng.randint(1, 6),
                "\n" * rng.randint(2, 5),
                "\r\n" * rng.randint(1, 3),
                "  \n \n\t \n",
                "\u00a0\u3000\u2003",
                " \n" * rng.randint(1, 4),
                "    ",
            )
        )

    def lookalike(self) -> str:
        return self.rng.choice(_LOOKALIKES) if self.specials else self.rng.choice(("<b>", "</p>", "<|", "|>"))

    def short(self) -> str:
        rng = self.rng
        pick = rng.random()
        if pick < 0.5:
            return self.prose(rng.randint(1, 8))
        if pick < 0.65:
            return self.cjk(rng.randint(2, 10))
        if pick < 0.75:
            return self.emoji(rng.randint(1, 3))
        if pick < 0.85 and self.specials:
            return self.prose(2) + " " + self.lookalike()
        return self.digits()

    # -- mixtures ------------------------------------------------------------------
    def block(self) -> str:
        """One paragraph-sized piece of a random kind."""
        rng = self.rng
        r = rng.random()
        if r < 0.40:
            s = self.prose(rng.randint(20, 120))
        elif r < 0.55:
            s = self.code(rng.randint(3, 14))
        elif r < 0.65:
            s = self.json_text()
        elif r < 0.75:
            s = self.cjk(rng.randint(20, 200))
        elif r < 0.80:
            s = self.emoji(rng.randint(3, 20))
        elif r < 0.87:
            s = " ".join(self.digits() for _ in range(rng.randint(2, 8)))
        elif r < 0.93:
            s = self.prose(rng.randint(3, 12)) + self.whitespace() + self.prose(rng.randint(3, 12))
        else:
            s = self.prose(rng.randint(2, 10)) + " " + self.lookalike() + " " + self.prose(rng.randint(2, 10))
        if rng.random() < 0.1:
            s += self.whitespace()
        return s

    def text(self, target_bytes: int) -> str:
        """Mixed blocks joined by blank lines, about `target_bytes` UTF-8 bytes long."""
        parts: list[str] = []
        size = 0
        while size < target_bytes:
            b = self.block()
            parts.append(b)
            size += len(b.encode("utf-8")) + 2
        return "\n\n".join(parts)


def strip_added_spellings(text: str, spellings: list[str]) -> str:
    """Remove every added-token spelling (for the raw-text workload, which uses the
    full-vocabulary `Tokenizer.encode` and must not meet special spellings)."""
    pattern = re.compile("|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True) if s))
    # a removal can create a new occurrence by joining its neighbours: repeat until none
    while pattern.search(text):
        text = pattern.sub("", text)
    return text


def corpus(seed: int, target_bytes: int, added_spellings: list[str]) -> str:
    return strip_added_spellings(TextGen(seed, specials=False).text(target_bytes), added_spellings)


# -- the agent conversation, protocol-neutral ------------------------------------------


@dataclass
class Step:
    """One agent step: an assistant message (reasoning, text, tool calls) and the results."""

    reasoning: str
    content: str
    calls: list[tuple[str, str, dict[str, Any]]]  # (call id, tool name, arguments)
    results: list[tuple[str, str]]  # (call id, result text)
    user_after: str | None = None  # a user message after the results, if any


@dataclass
class Conversation:
    system: str
    tools: list[dict[str, Any]]
    first_user: str
    steps: list[Step] = field(default_factory=list)


_TOOL_NAMES = (
    "read_file",
    "write_file",
    "run_shell",
    "search_code",
    "http_get",
    "list_dir",
    "apply_edit",
    "run_tests",
    "query_db",
    "get_weather",
    "send_message",
    "plan",
)


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def call_id(rng: random.Random) -> str:
    """A realistic tool-call id (random, so not in creation order when sorted)."""
    return "call_" + "".join(rng.choice(_ALNUM) for _ in range(24))


def make_tools(g: TextGen) -> list[dict[str, Any]]:
    tools = []
    for name in _TOOL_NAMES:
        props: dict[str, Any] = {
            "path": {"type": "string", "description": g.prose(g.rng.randint(4, 14))},
            "limit": {"type": "integer", "description": g.prose(5), "minimum": 1, "maximum": 100000},
            "mode": {"type": "string", "enum": ["fast", "exact", "dry-run"]},
            "options": {
                "type": "object",
                "properties": {
                    "recursive": {"type": "boolean"},
                    "pattern": {"type": "string", "description": g.short()},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
        tools.append(
            {
                "name": name,
                "description": g.prose(g.rng.randint(15, 60)),
                "parameters": {"type": "object", "properties": props, "required": ["path"]},
            }
        )
    return tools


def make_conversation(seed: int, target_tokens: int) -> Conversation:
    """An agent conversation of about `target_tokens` tokens (rendered, V4)."""
    g = TextGen(seed)
    rng = g.rng
    target = int(target_tokens * BYTES_PER_TOKEN)
    conv = Conversation(
        system="You are a coding agent. " + g.text(rng.randint(1500, 4000)),
        tools=make_tools(g),
        first_user=g.text(rng.randint(300, 3000)),
    )
    size = len(conv.system) + len(conv.first_user) + 6000
    while size < target:
        calls = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            args: dict[str, Any] = {
                "path": f"src/{rng.choice(_IDENTS)}/{rng.choice(_IDENTS)}.rs",
                "limit": rng.randint(1, 5000),
            }
            if rng.random() < 0.5:
                args["options"] = {
                    "recursive": rng.random() < 0.5,
                    "pattern": g.short(),
                    "tags": [g.short() for _ in range(rng.randint(0, 3))],
                }
            if rng.random() < 0.3:
                args["content"] = g.text(rng.randint(100, 1500))
            calls.append((call_id(rng), rng.choice(_TOOL_NAMES), args))
        results = [(cid, g.text(rng.randint(200, 6000))) for cid, _, _ in calls]
        step = Step(
            reasoning=g.text(rng.randint(100, 1200)),
            content=g.prose(rng.randint(5, 40)) if rng.random() < 0.6 else "",
            calls=calls,
            results=results,
            user_after=g.text(rng.randint(50, 800)) if rng.random() < 0.1 else None,
        )
        conv.steps.append(step)
        size += sum(len(s.encode("utf-8")) for s in (step.reasoning, step.content))
        size += sum(len(json.dumps(a, ensure_ascii=False)) + 120 for _, _, a in calls)
        size += sum(len(r.encode("utf-8")) + 30 for _, r in results)
        size += len(step.user_after.encode("utf-8")) if step.user_after else 0
    return conv


def truncated(conv: Conversation, steps: int) -> Conversation:
    return Conversation(conv.system, conv.tools, conv.first_user, conv.steps[:steps])


# -- protocol bodies -------------------------------------------------------------------


def to_chat(conv: Conversation, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = []
    if conv.system:
        msgs.append({"role": "system", "content": conv.system})
    msgs.append({"role": "user", "content": conv.first_user})
    for s in conv.steps:
        m: dict[str, Any] = {"role": "assistant", "content": s.content or None, "reasoning_content": s.reasoning}
        if s.calls:
            m["tool_calls"] = [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                }
                for cid, name, args in s.calls
            ]
        elif not s.content:
            m["content"] = ""
        msgs.append(m)
        for cid, text in s.results:
            msgs.append({"role": "tool", "tool_call_id": cid, "content": text})
        if s.user_after:
            msgs.append({"role": "user", "content": s.user_after})
    body: dict[str, Any] = {"model": MODEL, "messages": msgs}
    if conv.tools:
        body["tools"] = [{"type": "function", "function": t} for t in conv.tools]
    body.update(extra or {})
    return body


def to_responses(conv: Conversation, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": conv.first_user}]
    for i, s in enumerate(conv.steps):
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{i}",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": s.reasoning}],
            }
        )
        if s.content:
            items.append(
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": s.content}]}
            )
        for cid, name, args in s.calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": cid,
                    "name": name,
                    "arguments": json.dumps(args, ensure_ascii=False),
                }
            )
        for cid, text in s.results:
            items.append({"type": "function_call_output", "call_id": cid, "output": text})
        if s.user_after:
            items.append({"role": "user", "content": [{"type": "input_text", "text": s.user_after}]})
    body: dict[str, Any] = {"model": MODEL, "input": items}
    if conv.system:
        body["instructions"] = conv.system
    if conv.tools:
        body["tools"] = [{"type": "function", **t} for t in conv.tools]
    body.update(extra or {})
    return body


def to_messages(conv: Conversation, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": conv.first_user}]
    for s in conv.steps:
        blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": s.reasoning, "signature": ""}]
        if s.content:
            blocks.append({"type": "text", "text": s.content})
        for cid, name, args in s.calls:
            blocks.append({"type": "tool_use", "id": cid, "name": name, "input": args})
        msgs.append({"role": "assistant", "content": blocks})
        user: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": cid, "content": text} for cid, text in s.results
        ]
        if s.user_after:
            user.append({"type": "text", "text": s.user_after})
        if user:
            msgs.append({"role": "user", "content": user})
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 8192, "messages": msgs}
    if conv.system:
        body["system"] = conv.system
    if conv.tools:
        body["tools"] = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in conv.tools
        ]
    body.update(extra or {})
    return body


TO_PROTOCOL = {"chat": to_chat, "responses": to_responses, "messages": to_messages}


def dumps(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False)


# -- the five workloads ----------------------------------------------------------------


def agent_requests(protocol: str, seeds: list[int], target_tokens: int) -> list[str]:
    """(a) one long agent conversation per seed, as request bodies of `protocol`."""
    return [dumps(TO_PROTOCOL[protocol](make_conversation(s, target_tokens))) for s in seeds]


def big_message_requests(seeds: list[int], target_tokens: int) -> list[str]:
    """(b) one user message of about `target_tokens` tokens per seed (Chat)."""
    out = []
    for s in seeds:
        text = TextGen(s).text(int(target_tokens * BYTES_PER_TOKEN))
        out.append(dumps({"model": MODEL, "messages": [{"role": "user", "content": text}]}))
    return out


def small_requests(seed: int, count: int) -> list[tuple[str, str]]:
    """(c) `count` small requests of random protocols: (protocol, body)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        protocol = PROTOCOLS[i % 3]
        g = TextGen(seed * 100003 + i)
        conv = Conversation(
            system=g.text(rng.randint(0, 600)) if rng.random() < 0.6 else "",
            tools=make_tools(g)[: rng.choice((0, 0, 1, 3))],
            first_user=g.text(rng.randint(20, 2500)),
        )
        if conv.tools and rng.random() < 0.5:
            name = conv.tools[0]["name"]
            cid = call_id(rng)
            conv.steps.append(
                Step(
                    reasoning=g.prose(rng.randint(5, 60)),
                    content="",
                    calls=[(cid, name, {"path": g.short(), "limit": 3})],
                    results=[(cid, g.text(rng.randint(20, 1500)))],
                )
            )
        extra: dict[str, Any] = {}
        if rng.random() < 0.3:
            extra = {
                "chat": {"thinking": {"type": "disabled"}},
                "responses": {"reasoning": {"effort": "none"}},
                "messages": {"thinking": {"type": "disabled"}},
            }[protocol]
        out.append((protocol, dumps(TO_PROTOCOL[protocol](conv, extra))))
    return out


def growing_requests(seed: int, target_tokens: int) -> tuple[str, str]:
    """(d) the conversation of (a) with N steps and with N+1 steps (Chat)."""
    conv = make_conversation(seed, target_tokens)
    n = len(conv.steps)
    return dumps(to_chat(truncated(conv, n - 1))), dumps(to_chat(conv))
