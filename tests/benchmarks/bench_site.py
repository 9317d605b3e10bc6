"""How long the course site takes to build, against a one-page mkdocs-material site on the same machine.

    python tests/benchmarks/bench_site.py [--runs 3] [--from-nothing]

Measures, as the median of `--runs` runs of `mkdocs build --strict` in a fresh
process each, taken in turns so that all kinds meet the same load:

- a one-page mkdocs-material site made in a temporary folder (the floor: what
  MkDocs and the theme cost by themselves);
- a fresh clone's first build: `git clone` of this repository's last commit
  into a temporary folder, no `.cache/`, so the pages' results come from the
  committed `course/_build/executed/` and nothing else;
- this site, warm: the working tree with a local cache filled by a first build;
- with `--from-nothing`, this site with neither the committed results nor a
  cache (`COURSE_SITE_COMMITTED=0` and an empty cache): every block and both
  grader runs of lesson 0 run, as before the results were committed.

Then prints each page's build cost (Markdown to HTML, blocks included), as the
site's hooks record it, and the ratios to the one-page site. The repository's
own `.cache/` is not touched. It prints figures; it asserts nothing.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="builds of each kind; the median is reported")
    parser.add_argument("--from-nothing", action="store_true", help="also build with no committed results, no cache")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        for name in ("COURSE_SITE_RERUN", "COURSE_SITE_COMMITTED", "COURSE_SITE_CHECK", "COURSE_SITE_RECORD"):
            env.pop(name, None)
        one = tmp / "one-page"
        (one / "docs").mkdir(parents=True)
        (one / "mkdocs.yml").write_text(ONE_PAGE_CONFIG)
        (one / "docs" / "index.md").write_text(ONE_PAGE)
        clone = tmp / "clone"
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
        per_page: dict[str, dict[str, list[float]]] = {}
        kinds = {  # kind: (folder, local cache, extra environment, cleared before each run)
            "fresh clone": (clone, tmp / "clone-cache", {}, True),
            "warm": (REPO, tmp / "warm-cache", {}, False),
        }
        if args.from_nothing:
            kinds["from nothing"] = (REPO, tmp / "nothing-cache", {"COURSE_SITE_COMMITTED": "0"}, True)

        def course_build(kind: str) -> float:
            folder, cache, extra, clear = kinds[kind]
            if clear:
                shutil.rmtree(cache, ignore_errors=True)
            seconds = build(folder, tmp / "course-site", {**env, "COURSE_SITE_CACHE": str(cache), **extra})
            record = json.loads((cache / "build-times.json").read_text())
            for page, cost in record["pages"].items():
                per_page.setdefault(page, {}).setdefault(kind, []).append(cost)
            ran = f"{record['blocks run']} blocks and {record.get('grader runs', 0)} grader runs run"
            print(f"  {kind + ' build:':<20}{seconds:6.2f} s, {ran}", flush=True)
            return seconds

        course_build("warm")  # fills the warm cache (not counted)
        times: dict[str, list[float]] = {"one-page": [], **{kind: [] for kind in kinds}}
        for _ in range(args.runs):
            times["one-page"].append(build(one, tmp / "one-site", env))
            print(f"  {'one-page build:':<20}{times['one-page'][-1]:6.2f} s", flush=True)
            for kind in kinds:
                times[kind].append(course_build(kind))

    print()
    print(f"{'page':<24}" + "".join(f"{kind + ' s':>16}" for kind in kinds))
    for page, costs in per_page.items():
        cells = [f"{statistics.median(costs[k]):16.2f}" if k in costs else f"{'-':>16}" for k in kinds]
        print(f"{page:<24}{''.join(cells)}")
    print()
    floor = statistics.median(times["one-page"])
    for kind, runs in times.items():
        median = statistics.median(runs)
        ratio = "" if kind == "one-page" else f"   {median / floor:5.1f}x the one-page site"
        print(f"{kind + ' build':<20}{median:7.2f} s   runs {', '.join(f'{t:.2f}' for t in runs)}{ratio}")
    print("(the goal: a fresh clone's first build within 10x the one-page site)")


if __name__ == "__main__":
    main()
