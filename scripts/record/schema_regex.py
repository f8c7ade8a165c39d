"""Record the reference's two regex verdicts on generated patterns, for tests/test_schema_regex.py.

For every pattern the wheel is asked twice:

- ``compiles``: a 2020-12 schema ``{"pattern": p}`` (the pattern is compiled);
- ``ecma``: a draft-07 schema ``{"patternProperties": {p: {"type": "string"}}}``: draft-07's
  ``format: "regex"`` check names the pattern when it fails; when it passes and compiling
  fails, the error names the subschema instead.

Patterns come from a seeded grammar (groups, named groups, classes and class-set syntax,
lookaround, back-references, Unicode properties, every quantifier form, big counts, flags,
control escapes, verbose mode) plus systematic sweeps around the compiled-size limit.

Run with the published wheel, never with this package:

    /work/venv-ref/bin/python scripts/record/schema_regex.py

Recorded with deepseek-recipe 0.2.0 (the PyPI wheel) into
tests/reference_tables/schema_regex.json.gz as ``[[pattern, compiles, ecma], ...]``.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.schema_regex_driver import compiles, ecma

OUT = Path(__file__).resolve().parents[2] / "tests" / "reference_tables" / "schema_regex.json.gz"

LETTER_ESCAPES = [f"\\{c}" for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"]
ATOMS = [
    "a",
    "b",
    "x",
    "Z",
    "0",
    "7",
    "_",
    "-",
    ".",
    "é",
    "中",
    "😀",
    " ",
    "/",
    "<",
    ">",
    "=",
    "!",
    ",",
    "'",
    "#",
    "\\.",
    "\\*",
    "\\/",
    "\\-",
    "\\ ",
    "\\\\",
    "\\[",
    "\\]",
    "\\{",
    "\\}",
    "\\(",
    "\\)",
    "\\|",
    "\\^",
    "\\$",
    "\\0",
    "\\00",
    "\\1",
    "\\2",
    "\\10",
    "\\x41",
    "\\x4",
    "\\x{41}",
    "\\x{110000}",
    "\\u0041",
    "\\u{41}",
    "\\u{1F600}",
    "\\uD83D\\uDE00",
    "\\U0001F600",
    "\\cA",
    "\\cz",
    "\\c1",
    "\\c",
    "\\k<n>",
    "\\k'n'",
    "\\g1",
    "\\g<n>",
    "\\p{L}",
    "\\P{L}",
    "\\p{^L}",
    "\\pL",
    "\\p{Lu}",
    "\\p{Letter}",
    "\\p{Greek}",
    "\\p{Script=Greek}",
    "\\p{sc=Grek}",
    "\\p{Any}",
    "\\p{ASCII}",
    "\\p{Foo}",
    "\\p{L&}",
    "\\p{}",
    "\\p",
    "\\X",
    "\\R",
    "\\K",
    "\\G",
    "\\Q",
    "\\E",
    "\\N",
    "\\h",
    "\\H",
    "\\v",
    "\\V",
    "\\e",
    "\\b",
    "\\B",
    "\\A",
    "\\z",
    "\\Z",
    "\\<",
    "\\>",
    "^",
    "$",
    "\\d",
    "\\D",
    "\\w",
    "\\W",
    "\\s",
    "\\S",
    "\\t",
    "\\n",
    "\\r",
    "\\f",
    "\\a",
] + LETTER_ESCAPES
CLASSES = [
    "[abc]",
    "[^a]",
    "[a-z]",
    "[z-a]",
    "[\\d-z]",
    "[a-\\d]",
    "[[:alpha:]]",
    "[[:foo:]]",
    "[[:^digit:]]",
    "[a&&b]",
    "[a--b]",
    "[a~~b]",
    "[]",
    "[^]",
    "[]a]",
    "[^]a]",
    "[\\]]",
    "[-a]",
    "[a-]",
    "[\\p{L}]",
    "[\\w\\s]",
    "[a[b]]",
    "[\\b]",
    "[.]",
    "[\\\\]",
    "[\\w--z]",
    "[a-z--b]",
    "[\\d-]",
    "[&&]",
    "[~~]",
    "[--]",
    "[a-z&&[^aeiou]]",
    "[\\cA]",
    "[\\c]",
    "[\\a]",
    "[\\x41-\\x5A]",
    "[\\u0041-\\u005A]",
    "[\\u{41}]",
    "[é-中]",
    "[^\\D]",
    "[\\S\\s]",
    "[(?<n>)]",
    "[|]",
    "[[]",
    "[a-b-c]",
    "[\\-]",
    "[a\\-z]",
    "[\\q{ab}]",
    "[\\p{^L}]",
    "[\\P{L}]",
]
QUANTIFIERS = [
    "*",
    "+",
    "?",
    "*?",
    "+?",
    "??",
    "*+",
    "++",
    "?+",
    "{2}",
    "{2,}",
    "{2,3}",
    "{,3}",
    "{2, 3}",
    "{ 2 }",
    "{2}?",
    "{2}+",
    "{2,3}?",
    "{3,2}",
    "{0}",
    "{0,0}",
    "{1000}",
    "{65535}",
    "{65536}",
    "{100000}",
    "{4294967295}",
    "{4294967296}",
    "{99999999999999999999}",
    "{",
    "{a}",
    "{2",
    "{,}",
    "{-1}",
]
GROUP_OPENERS = [
    "(",
    "(?:",
    "(?<n>",
    "(?<m>",
    "(?P<n>",
    "(?'n'",
    "(?=",
    "(?!",
    "(?<=",
    "(?<!",
    "(?>",
    "(?i)",
    "(?i:",
    "(?-i:",
    "(?x)",
    "(?s)",
    "(?m)",
    "(?U)",
    "(?u)",
    "(?ims:",
    "(?i-m:",
    "(?ii:",
    "(?-:",
    "(?R)",
    "(?#c)",
    "(?|",
    "(?(1)",
    "(?(n)",
    "(?<1>",
    "(?<n-m>",
    "(?<é>",
    "(?<n.m>",
    "(?<n[0]>",
    "(?<>",
    "(?P=n)",
    "(?P>n)",
    "(?~",
    "(*FAIL)",
    "(?<$n>",
]


def node(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth <= 0 or roll < 0.35:
        return rng.choice(ATOMS)
    if roll < 0.5:
        return rng.choice(CLASSES)
    if roll < 0.75:
        opener = rng.choice(GROUP_OPENERS)
        body = sequence(rng, depth - 1)
        if opener.endswith(")"):
            return opener + body
        return opener + body + (")" if rng.random() < 0.93 else "")
    if roll < 0.9:
        return node(rng, depth - 1) + rng.choice(QUANTIFIERS)
    return sequence(rng, depth - 1) + "|" + sequence(rng, depth - 1)


def sequence(rng: random.Random, depth: int) -> str:
    return "".join(node(rng, depth) for _ in range(rng.randint(0, 4)))


def mutate(rng: random.Random, pattern: str) -> str:
    if not pattern:
        return pattern
    i = rng.randrange(len(pattern) + 1)
    action = rng.random()
    if action < 0.4:
        return pattern[:i] + pattern[i + 1 :]
    return pattern[:i] + rng.choice("()[]{}|\\?*+^$-,:<>=!'#") + pattern[i:]


def systematic() -> list[str]:
    out: list[str] = []
    size_atoms = [
        "a",
        ".",
        "\\w",
        "\\W",
        "\\d",
        "\\s",
        "\\S",
        "\\p{L}",
        "\\pL",
        "\\p{Greek}",
        "[a-z]",
        "[^a]",
        "(?:ab)",
        "(a)",
        "[\\s\\S]",
        "(?i)k",
        "\\P{L}",
        "\\p{^L}",
        "(?=a)a",
    ]
    counts = [10, 50, 100, 200, 300, 500, 700, 1000, 2000, 5000, 10000, 50000, 100000, 1000000]
    for atom in size_atoms:
        for n in counts:
            out += [f"{atom}{{{n}}}", f"{atom}{{{n},}}", f"(?:{atom}){{1,{n}}}", f"(?=x){atom}{{{n}}}"]
    for outer in [2, 10, 30, 100, 1000]:
        for inner in [2, 10, 30, 100, 1000]:
            out += [
                f"(a{{{inner}}}){{{outer}}}",
                f"(?:\\w{{{inner}}}){{{outer}}}",
                f"((?:[a-z]{{{inner}}}){{{outer}}})",
            ]
    for n in [1, 2, 10, 100, 249, 250, 251, 300, 1000]:
        out += ["(" * n + "a" + ")" * n, "(?:" * n + "a" + ")" * n, "[" * n + "a" + "]" * n, "a" * n, "\\d" * n]
    names = [
        "(?<a>x)(?<a>y)",
        "(?<a>x)|(?<a>y)",
        "((?<a>x)|(?<a>y))",
        "(?:(?<a>x)|b)(?<a>y)",
        "(?<a>x)\\k<a>",
        "\\k<a>(?<a>x)",
        "\\k<b>(?<a>x)",
        "(?<a>x)(?P=a)",
        "(?<a>(?<b>x))",
        "(?<a>x)(?<A>y)",
        "(?<a1>x)",
        "(?<1a>x)",
        "(?<a_b>x)",
        "(?<a$>x)",
        "(?<\\u0061>x)",
        "(?<a>x)(?<\\u0061>y)",
        "(?=(?<a>x))(?<a>y)",
        "(?<a>x)(?=\\k<a>)",
        "(a)(?=\\1)",
        "(?=(a))\\1",
        "(?<=a+)b",
        "(?<=ab|c)d",
        "(?<!a{2,})b",
        "(?=a)*",
        "(?=a)+",
        "(?=a){2}",
        "(?!a)?",
        "\\b*",
        "^*",
        "$+",
        "(?:)*",
        "()*",
        "(?i)(?-i)a",
        "(?x) a # c\n b",
        "(?x)#\\cJ(",
        "(?x)[ a ]",
        "(?x)a\\ b",
        "(?x)(?<n>x) # (",
        "(?x)\\cI",
        "a(?x) b",
    ]
    out += names
    for n in [999, 1000, 1001, 1500]:
        out.append("".join(f"(?<n{i}>x)" for i in range(n)))
    return out


def main() -> None:
    rng = random.Random(20250601)
    patterns: list[str] = []
    seen: set[str] = set()

    def add(p: str) -> None:
        if p not in seen:
            seen.add(p)
            patterns.append(p)

    for p in ATOMS + CLASSES + systematic():
        add(p)
    for atom in ATOMS + CLASSES:
        for q in QUANTIFIERS:
            add(atom + q)
    for opener in GROUP_OPENERS:
        for body in ["", "a", "a|b", "\\d", "(?=a)", "a)"]:
            add(opener + body + ("" if opener.endswith(")") else ")"))
    while len(patterns) < 9000:
        p = sequence(rng, 3)
        add(p)
        if rng.random() < 0.3:
            add(mutate(rng, p))
    rows = []
    for p in patterns:
        rows.append([p, compiles(p), ecma(p)])
    OUT.write_bytes(gzip.compress(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0))
    print(f"{len(rows)} patterns ({sum(r[1] for r in rows)} compile, {sum(r[2] for r in rows)} ECMA) -> {OUT}")


if __name__ == "__main__":
    main()
