"""Benchmark: the learner's install as the README's Quick start gives it, in a fresh virtual environment.

    python tests/benchmarks/bench_install.py [--python PYTHON] [--keep]

Clones this repository's last commit into a temporary folder, makes a virtual environment there with PYTHON
(default: this interpreter; give the system's or pyenv's own Python, not a virtual environment's), and runs the
pip commands of this system's Quick start, read from README.md (so what is timed is
what the README says), one by one with the environment's `pip`, as a learner does after activating it. Prints
the time of each command and the environment's size: its apparent size (what `du -sb` counts) and the disk it
takes (`du -s`). Then the size again after what a learner runs next, each of which makes Python write the bytecode
of the modules it imports (`pip install --no-compile` leaves that to them): a grading run of the stubs
(`pytest autograder`), of the reference (`--impl solutions`), and a site build (`mkdocs build`).

The children run without PYTHONDONTWRITEBYTECODE, as on a learner's machine. Nothing is asserted: the network,
the package index and the machine's load move every figure.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def readme_commands(system: str = platform.system()) -> list[str]:
    """The pip commands of this system's Quick start in the README (`python -m pip install ...`)."""
    name = {"Linux": "Linux", "Darwin": "macOS", "Windows": "Windows"}[system]
    readme = (REPO / "README.md").read_text()
    block = re.search(rf"^On {name}\b[^\n]*\n(?:[^\n]+\n)*\n```(?:bash|powershell)\n(.*?)^```$", readme, re.S | re.M)
    if block is None:
        raise SystemExit(f"no Quick start for {name} in the README")
    lines = re.sub(r"\\\n\s*", "", block[1]).splitlines()  # a line ending in a backslash goes on, as in a shell
    return [line for line in lines if "pip install" in line]


def size(folder: Path) -> tuple[int, int]:
    """(apparent bytes, bytes of disk), counting every file and folder once, as `du -sb` and `du -s` do."""
    seen, apparent, disk = set(), 0, 0
    for root, dirs, files in os.walk(folder):
        for path in ([root] if root == str(folder) else []) + [os.path.join(root, name) for name in dirs + files]:
            info = os.lstat(path)
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            apparent += info.st_size
            disk += getattr(info, "st_blocks", (info.st_size + 4095) // 4096 * 8) * 512
    return apparent, disk


def show(what: str, folder: Path) -> None:
    apparent, disk = size(folder)
    print(f"{what:<44}{apparent / 1e9:>7.3f} GB apparent{disk / 2**30:>8.3f} GiB of disk")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the Python that makes the environment")
    parser.add_argument("--keep", action="store_true", help="keep the clone and its environment (prints where)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-install-"))
    course, venv = tmp / "course", tmp / "course" / ".venv"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(course)], check=True)
    subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"  # as `source .venv/bin/activate` does
    env["VIRTUAL_ENV"] = str(venv)
    version = subprocess.run([bin_dir / "python", "--version"], capture_output=True, text=True, env=env).stdout
    print(f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {version.strip()}, ", end="")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}" if hasattr(os, "getloadavg") else "")
    total = 0.0
    for command in readme_commands():
        start = time.perf_counter()
        proc = subprocess.run(shlex.split(command), cwd=course, env=env, capture_output=True, text=True)
        took = time.perf_counter() - start
        total += took
        retries = proc.stdout.count("Retrying") + proc.stderr.count("Retrying")
        print(f"{took:7.1f} s  {command}" + (f"   ({retries} retries of an index logged)" if retries else ""))
        if proc.returncode:
            raise SystemExit(f"exit {proc.returncode}:\n{proc.stderr[-3000:]}")
    print(f"{total:7.1f} s  in all")
    show("after the install", venv)
    for what, command in (
        ("after `pytest autograder`", ["pytest", "autograder"]),
        ("after `pytest autograder --impl solutions`", ["pytest", "autograder", "--impl", "solutions"]),
        ("after `mkdocs build`", ["mkdocs", "build", "--quiet", "--site-dir", str(tmp / "site")]),
    ):
        subprocess.run(command, cwd=course, env=env, capture_output=True)
        show(what, venv)
    if args.keep:
        print(f"kept: {course}")
    else:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
