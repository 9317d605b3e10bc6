"""The course site builds where Unix-only Python modules do not exist (Windows).

Runs `mkdocs build --strict` in a Python whose import system refuses
`resource`, `fcntl`, `termios`, `pwd` and `grp`, and whose `subprocess.Popen`
refuses `preexec_fn`, as on Windows. Every page block runs again
(`COURSE_SITE_RERUN=1`), since a block answered from the build cache would prove
nothing; the grader that lesson 0 runs in its own process is not concerned.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
UNIX_ONLY = ("resource", "fcntl", "termios", "pwd", "grp")

# Run with `python -c WINDOWS_LIKE SITE_DIR`: hides the modules, then builds.
WINDOWS_LIKE = f"""
import subprocess, sys

UNIX_ONLY = {UNIX_ONLY!r}


class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in UNIX_ONLY:
            raise ModuleNotFoundError(f"No module named {{name!r}} (hidden: Windows has none)", name=name)
        return None


sys.meta_path.insert(0, Refuse())
for name in [n for n in sys.modules if n.partition(".")[0] in UNIX_ONLY]:
    del sys.modules[name]

_init = subprocess.Popen.__init__


def _no_preexec_fn(self, *args, preexec_fn=None, **kwargs):
    if preexec_fn is not None:
        raise ValueError("preexec_fn is not supported on Windows platforms")
    _init(self, *args, **kwargs)


subprocess.Popen.__init__ = _no_preexec_fn

from mkdocs.__main__ import cli

cli(["build", "--strict", "--site-dir", sys.argv[1]])
"""


def test_the_site_builds_without_unix_only_modules(tmp_path):
    env = {**os.environ, "COURSE_SITE_RERUN": "1", "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", WINDOWS_LIKE, str(tmp_path / "site")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    log = proc.stdout[-6000:] + proc.stderr[-6000:]
    assert proc.returncode == 0, f"the build fails without {', '.join(UNIX_ONLY)}:\n{log}"
    assert (tmp_path / "site" / "index.html").exists()


def test_the_refusal_works():
    """The wrapper really hides the modules and refuses preexec_fn (else the test above proves nothing)."""
    probe = WINDOWS_LIKE.split("from mkdocs.__main__")[0] + (
        "import importlib\n"
        "for name in UNIX_ONLY:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError:\n"
        "        print('hidden', name)\n"
        "try:\n"
        "    subprocess.run([sys.executable, '-c', 'pass'], preexec_fn=lambda: None)\n"
        "except ValueError:\n"
        "    print('refused preexec_fn')\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60).stdout
    assert out.split("\n") == [f"hidden {name}" for name in UNIX_ONLY] + ["refused preexec_fn", ""], out
