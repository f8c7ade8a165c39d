"""Image preprocessing: this project against deepseek-recipe 0.2.0, in one run, same files.

    python3 bench/image_bench.py [--project-python .venv/bin/python] [--ref-python PATH] [--repeat 5]

The images (a gradient with noise, as JPEG quality 90 and as PNG) are made once with Pillow by
the project's Python; each implementation then preprocesses every file ``--repeat`` times in
its own process (``OpenCvImagePreprocessor().preprocess(data, PreprocessOptions("high", 8192,
512))``), and the median wall time and the process CPU time per call are printed, with the
output size (the geometry must agree) and the WebP bytes. Nothing here is a dependency of the
library; the reference is only run, never imported by the project.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SIZES = [(64, 64), (512, 512), (1024, 768), (2048, 2048), (4096, 3072), (8192, 8192)]

MAKE = r"""
import random, sys
from pathlib import Path
from PIL import Image
out = Path(sys.argv[1]); rng = random.Random(1)
for w, h in SIZES:
    base = Image.linear_gradient("L").resize((w, h)).convert("RGB")
    noise = Image.effect_noise((w, h), 40).convert("RGB")
    image = Image.blend(base, noise, 0.3)
    image.save(out / f"{w}x{h}.jpg", "JPEG", quality=90)
    image.save(out / f"{w}x{h}.png", "PNG", compress_level=1)
"""

RUN = r"""
import json, statistics, sys, time
from pathlib import Path
import deepseek_recipe as dr
folder, repeat = Path(sys.argv[1]), int(sys.argv[2])
pre, options = dr.OpenCvImagePreprocessor(), dr.PreprocessOptions("high", 8192, 512)
rows = []
for path in sorted(folder.iterdir(), key=lambda p: (p.suffix, p.stat().st_size)):
    data = path.read_bytes()
    pre.preprocess(data, options)  # warm-up
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        info = pre.preprocess(data, options)
        walls.append(time.perf_counter() - wall); cpus.append(time.process_time() - cpu)
    wall_ms, cpu_ms = statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3
    rows.append([path.name, wall_ms, cpu_ms, info.width, info.height, len(info.data)])
print(json.dumps(rows))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project-python", default=".venv/bin/python")
    parser.add_argument("--ref-python", default="bench/.venv-ref/bin/python")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        make = f"SIZES = {SIZES!r}\n" + MAKE
        subprocess.run([args.project_python, "-c", make, folder], check=True)
        results = {}
        for name, python in [("ours", args.project_python), ("deepseek-recipe 0.2.0", args.ref_python)]:
            if not Path(python).exists():
                print(f"{name}: {python} not found, skipped", file=sys.stderr)
                continue
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # each its own package
            out = subprocess.run(
                [python, "-c", RUN, folder, str(args.repeat)], check=True, capture_output=True, text=True, env=env
            )
            results[name] = json.loads(out.stdout)
    names = list(results)
    print("| file | " + " | ".join(f"{n} ms (cpu ms)" for n in names) + " | output | WebP bytes |")
    print("|---|" + "---|" * (len(names) + 2))
    for i, row in enumerate(results[names[0]]):
        cells = []
        for n in names:
            r = results[n][i]
            cells.append(f"{r[1]:.1f} ({r[2]:.1f})")
        sizes = {f"{results[n][i][3]}x{results[n][i][4]}" for n in names}
        print(
            f"| {row[0]} | "
            + " | ".join(cells)
            + f" | {' / '.join(sorted(sizes))} | "
            + " / ".join(str(results[n][i][5]) for n in names)
            + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
