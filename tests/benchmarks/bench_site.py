"""How long the course site takes to build, against a one-page mkdocs-material site on the same machine.

    python tests/benchmarks/bench_site.py [--runs 3] [--no-cold]

Measures, as the median of `--runs` runs of `mkdocs build --strict` in a fresh
process each (the one-page and the warm builds taken in turns, so that both meet
the same load):

- a one-page mkdocs-material site made in a temporary folder (the floor: what
  MkDocs and the theme cost by themselves);
- this site, cold: an empty build cache (a temporary `COURSE_SITE_CACHE`), so
  every page block and the grader runs of lesson 0 run;
- this site, warm: the same cache, filled by the cold build.

Then prints each page's build cost (Markdown to HTML, blocks included), as the
site's hooks record it, and the ratio warm / one-page. The repository's own
`.cache/` is not touched. It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

ONE_PAGE_CONFIG = """site_name: One page
theme:
  name: material
  font: false
plugins:
  - search
"""
ONE_PAGE = "# One page\n\nA paragraph with *emphasis*, a [link](#one-page) and some `code`.\n"


def build(cwd: Path, site: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"mkdocs build failed in {cwd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds


def median_of(runs: int, once) -> tuple[float, list[float]]:
    """The median of `runs` calls of `once`, and every time measured."""
    times = [once() for _ in range(runs)]
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="builds of each kind; the median is reported")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold builds (warm from the repo's cache)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        one = tmp / "one-page"
        (one / "docs").mkdir(parents=True)
        (one / "mkdocs.yml").write_text(ONE_PAGE_CONFIG)
        (one / "docs" / "index.md").write_text(ONE_PAGE)
        cache = None if args.no_cold else tmp / "cache"
        site_env = {**env, "COURSE_SITE_CACHE": str(cache)} if cache else env
        timings = Path(cache or REPO / ".cache" / "site") / "build-times.json"
        per_page: dict[str, dict[str, float]] = {}

        def course_build(kind: str, clear: bool) -> float:
            if clear:
                shutil.rmtree(cache, ignore_errors=True)
            seconds = build(REPO, tmp / "course-site", site_env)
            record = json.loads(timings.read_text())
            for page, cost in record["pages"].items():
                per_page.setdefault(page, {}).setdefault(kind, []).append(cost)
            print(f"  {kind} build: {seconds:6.2f} s, {record['blocks run']} blocks run", flush=True)
            return seconds

        if cache:
            cold, cold_runs = median_of(args.runs, lambda: course_build("cold", clear=True))
        # one-page and warm builds alternate, so that both meet the same load on a busy machine
        floor_runs, warm_runs = [], []
        for _ in range(args.runs):
            floor_runs.append(build(one, tmp / "one-site", env))
            print(f"  one-page build: {floor_runs[-1]:6.2f} s", flush=True)
            warm_runs.append(course_build("warm", clear=False))
        floor, warm = statistics.median(floor_runs), statistics.median(warm_runs)

    print()
    print(f"{'page':<24}{'cold s':>9}{'warm s':>9}")
    for page, kinds in per_page.items():
        cells = [f"{statistics.median(kinds[k]):9.2f}" if k in kinds else f"{'-':>9}" for k in ("cold", "warm")]
        print(f"{page:<24}{''.join(cells)}")
    print()
    print(f"one-page build  {floor:6.2f} s   runs {', '.join(f'{t:.2f}' for t in floor_runs)}")
    if cache:
        print(f"cold build      {cold:6.2f} s   runs {', '.join(f'{t:.2f}' for t in cold_runs)}")
    print(f"warm build      {warm:6.2f} s   runs {', '.join(f'{t:.2f}' for t in warm_runs)}")
    print(f"warm / one-page {warm / floor:6.1f}x  (the goal: at most 10x)")


if __name__ == "__main__":
    main()
