"""Tables recorded from the published deepseek-recipe 0.2.0 wheel by ``scripts/record/*.py``.

Each table is committed next to the script that made it; tests compare this package against
them without importing the reference.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

TABLES = Path(__file__).parent / "reference_tables"


def load_table(name: str) -> Any:
    """The table ``tests/reference_tables/<name>.json.gz``."""
    return json.loads(gzip.decompress((TABLES / f"{name}.json.gz").read_bytes()))


# Our typed errors (docs/python-api.md) subclass the builtin the wheel raises for the same failure
# and add ``kind``; the wheel's records name that builtin. Comparisons see them as the wheel's
# class, so the message and the builtin are still checked exactly.
TYPED_ERRORS = ("TokenizerError", "StreamError", "ConsumedError")


def reference_class_name(error: BaseException) -> str:
    """The name of the class the wheel raises where we raise ``error``."""
    cls = type(error)
    if cls.__name__ in TYPED_ERRORS and cls.__module__.endswith("_native"):
        return cls.__mro__[1].__name__
    return cls.__name__


def as_reference_record(value: Any) -> Any:
    """A probe result with each typed error's record as the wheel's: the class it subclasses,
    its MRO from there, no ``kind``."""
    if isinstance(value, list):
        return [as_reference_record(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: as_reference_record(v) for k, v in value.items()}
    error = out.get("error")
    if isinstance(error, dict) and error.get("type") in TYPED_ERRORS and isinstance(error.get("mro"), list):
        mro = error["mro"]
        out["error"] = {k: v for k, v in error.items() if k != "kind"} | {"type": mro[1], "mro": mro[1:]}
    return out
