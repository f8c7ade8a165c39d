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
