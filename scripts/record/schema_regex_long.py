"""Record the reference's two regex verdicts on long patterns, for tests/test_schema_regex.py.

The 9,000 patterns of ``schema_regex.py`` are short; these are long, one family per way a
pattern can be long: runs of ordinary atoms (up to and past the compiled-size limit), white
space and comments in verbose mode, a character class naming one letter a million times,
empty groups, and runs of repetitions (``a*``, ``(a|b)*``: the engine's optimizer takes time
quadratic in them). Each row is ``[family, prefix, unit, count, suffix, compiles, ecma]``,
the pattern being ``prefix + unit * count + suffix``, asked as ``schema_regex.py`` asks.

Run with the published wheel, never with this package:

    /path/to/venv-ref/bin/python scripts/record/schema_regex_long.py

Recorded with deepseek-recipe 0.2.0 (the PyPI wheel) into
tests/reference_tables/schema_regex_long.json.gz; it takes about two minutes, most of it in
the longest runs of repetitions.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.schema_regex_driver import compiles, ecma

OUT = Path(__file__).resolve().parents[2] / "tests" / "reference_tables" / "schema_regex_long.json.gz"
MIB = 1 << 20

# (family, prefix, unit, suffix, counts)
FAMILIES: list[tuple[str, str, str, str, list[int]]] = [
    # Ordinary atoms, on both sides of the compiled-size limit (found by bisection).
    ("letters", "", "a", "", [100_000, 327_673, 327_674]),
    ("unicode_escapes", "", "\\u0041", "", [174_762, 327_673]),
    ("wide_letters", "", "中", "", [109_224, 109_225]),
    ("groups", "", "(a)", "", [109_224, 109_225]),
    ("classes", "", "[ab]", "", [145_632, 145_633]),
    # Long patterns that compile to almost nothing, up to and past a mebibyte.
    ("class_of_one_letter", "[", "a", "]", [MIB - 2, MIB - 1, 4 * MIB]),
    ("verbose_space", "(?x)", " ", "", [MIB - 4, MIB - 3, 4 * MIB]),
    ("verbose_comment", "(?x)#", "a", "", [MIB - 5, 4 * MIB]),
    ("empty_groups", "", "(?:)", "", [MIB // 4, MIB // 2]),
    # Runs of repetitions: the optimizer's rewrite of each window of three is quadratic.
    ("star_runs", "", "a*", "", [1_000, 10_000, 30_000, 100_000]),
    ("alternation_star_runs", "", "(a|b)*", "", [1_000, 10_000, 30_000, 100_000]),
    ("optional_runs", "", "a?", "", [100_000]),
]


def main() -> None:
    rows = []
    for family, prefix, unit, suffix, counts in FAMILIES:
        for count in counts:
            pattern = prefix + unit * count + suffix
            start = time.monotonic()
            row = [family, prefix, unit, count, suffix, compiles(pattern), ecma(pattern)]
            print(f"{family} x{count} ({len(pattern)} bytes): {row[5:]} in {time.monotonic() - start:.1f} s")
            rows.append(row)
    OUT.write_bytes(gzip.compress(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0))
    print(f"{len(rows)} patterns -> {OUT}")


if __name__ == "__main__":
    main()
