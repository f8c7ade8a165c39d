"""Record the reference's image token counts and preprocessed geometry, for the image tests.

Two tables, both from the published wheel:

* ``tokens``: ``MultiModalData([ImageInfo(b"", w, h)]).image_token_adjustment() + 1``, the image
  token count of a ``w`` x ``h`` image, for EVERY size in these sets:
  - ``grid``: every ``w, h`` in 1..4096 (16.7M sizes; one CRC-32 per ``w`` over the
    little-endian u16 counts for ``h`` = 1..4096, so a mismatch names its row);
  - ``strips``: every ``w`` in 0..64 against every ``h`` in 1..131072, both ways round (thin
    images: the upscale, the fixed-point rounding and the one-column/one-row budget branches);
  - ``patch_multiples``: every ``14i x 14j`` for ``i, j`` in 1..1170 (every size a preprocessed
    image can have);
  - ``explicit``: the counts themselves for every size in 0..256 squared, the zero and u32-max
    corners, and 40,000 log-uniform sizes up to 2^32 - 1 (seeded).
* ``geometry``: ``OpenCvImagePreprocessor().preprocess(png, PreprocessOptions(...))`` on solid
  PNGs made here, as ``[w, h, detail, max_dimension_px, low_detail_max_dimension_px, W, H]`` or
  ``[..., "ErrorKind"]``. EVERY size in these sets:
  - ``high``, ``low``, ``original``, ``auto`` with (48, 16) for every ``w, h`` in 1..52 (the
    too-large errors past 48, the low-detail scaling past 16);
  - ``low`` with ``low_detail_max_dimension_px`` 0, 1, 2, 5, 7, 31 (max 40) for every ``w, h``
    in 1..40;
  - the resolver's options (8192, 512), ``high`` and ``low``, for every ``w`` in 1..4 against
    every ``h`` in 1..2600, both ways round (thin images, the 16,383-pixel WebP side limit);
  - (2048, 512) ``high`` for every square 1..2048 and ``low`` for every square 1..1100;
  - 3,000 seeded sizes in 1..2048 squared, ``high`` and ``low`` with (2048, 512).

Run with the published wheel, never with this package (about an hour on two shared cores):

    /work/venv-ref/bin/python scripts/record/image_geometry.py

Recorded with deepseek-recipe 0.2.0 (the PyPI wheel, CPython 3.11, manylinux x86_64) into
tests/reference_tables/image_geometry.json.gz.
"""

from __future__ import annotations

import array
import gzip
import json
import random
import struct
import sys
import zlib
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import deepseek_recipe as dr

OUT = Path(__file__).resolve().parents[2] / "tests" / "reference_tables" / "image_geometry.json.gz"
U32_MAX = 2**32 - 1


def tokens(width: int, height: int) -> int:
    return int(dr.MultiModalData([dr.ImageInfo(b"", width, height)]).image_token_adjustment()) + 1


def crc_of(counts: list[int]) -> int:
    values = array.array("H", counts)
    if sys.byteorder != "little":
        values.byteswap()
    return zlib.crc32(values.tobytes())


def token_tables() -> dict[str, Any]:
    grid = [crc_of([tokens(w, h) for h in range(1, 4097)]) for w in range(1, 4097)]
    tall = [crc_of([tokens(w, h) for h in range(1, 131073)]) for w in range(65)]
    wide = [crc_of([tokens(h, w) for h in range(1, 131073)]) for w in range(65)]
    multiples = [crc_of([tokens(14 * i, 14 * j) for j in range(1, 1171)]) for i in range(1, 1171)]
    explicit = [[w, h, tokens(w, h)] for w in range(257) for h in range(257)]
    corners = [0, 1, 2, 13, 14, 15, 41, 42, 43, 543, 544, 545, 546, 16383, 16384, 2**31, U32_MAX - 14, U32_MAX]
    explicit += [[w, h, tokens(w, h)] for w in corners for h in corners]
    rng = random.Random(20260419)
    for _ in range(40000):
        w = min(U32_MAX, int(2 ** rng.uniform(0, 32)))
        h = min(U32_MAX, int(2 ** rng.uniform(0, 32)))
        explicit.append([w, h, tokens(w, h)])
    return {
        "grid": {"size": 4096, "crc32_rows": grid},
        "strips": {"widths": 65, "length": 131072, "tall_crc32": tall, "wide_crc32": wide},
        "patch_multiples": {"count": 1170, "crc32_rows": multiples},
        "explicit": explicit,
    }


def solid_png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    packer = zlib.compressobj(6)
    row = b"\x00" + b"\xc8\x1e\x1e" * width
    stream = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", stream) + chunk(b"IEND", b"")


Task = tuple[int, int, str, int, int]


def preprocess(task: Task) -> list[Any]:
    w, h, detail, maximum, low = task
    options = dr.PreprocessOptions(detail, maximum, low)
    try:
        info = dr.OpenCvImagePreprocessor().preprocess(solid_png(w, h), options)
    except dr.ImageError as error:
        return [*task, error.kind]
    return [*task, info.width, info.height]


def geometry_tasks() -> list[Task]:
    tasks: list[Task] = []
    for detail in ("high", "low", "original", "auto"):
        tasks += [(w, h, detail, 48, 16) for w in range(1, 53) for h in range(1, 53)]
    for low in (0, 1, 2, 5, 7, 31):
        tasks += [(w, h, "low", 40, low) for w in range(1, 41) for h in range(1, 41)]
    for detail in ("high", "low"):
        for w in range(1, 5):
            for h in range(1, 2601):
                tasks += [(w, h, detail, 8192, 512), (h, w, detail, 8192, 512)]
    tasks += [(s, s, "high", 2048, 512) for s in range(1, 2049)]
    tasks += [(s, s, "low", 2048, 512) for s in range(1, 1101)]
    rng = random.Random(7)
    for _ in range(3000):
        w, h = rng.randint(1, 2048), rng.randint(1, 2048)
        tasks += [(w, h, "high", 2048, 512), (w, h, "low", 2048, 512)]
    return sorted(set(tasks))


def main() -> None:
    assert dr.__version__ == "0.2.0", dr.__version__
    tasks = geometry_tasks()
    with Pool(6) as pool:
        geometry = pool.map(preprocess, tasks, chunksize=64)
    table = {"wheel": f"deepseek-recipe {dr.__version__}", "tokens": token_tables(), "geometry": geometry}
    OUT.write_bytes(gzip.compress(json.dumps(table, separators=(",", ":")).encode(), 9, mtime=0))
    print(f"{OUT}: {len(geometry)} geometry rows, {len(table['tokens']['explicit'])} explicit token rows")


if __name__ == "__main__":
    main()
