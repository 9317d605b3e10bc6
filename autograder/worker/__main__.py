"""`python -m autograder.worker HOW ... [--nice N]`: how the trusted side starts a worker process (see `main`).

`--nice N` applies first, before the worker's imports, so that a spawned worker starts behind the grader.
The grader starts it with -S and its own `sys.path` in PYTHONPATH; `sitecustomize` is imported here.
"""

import os
import sys

if sys.flags.no_site:  # started with -S (see grading.launchers.python): what `site` would have imported
    try:
        import sitecustomize  # noqa: F401 - its import is its effect
    except ImportError:
        pass

argv = sys.argv[1:]
if "--nice" in argv:
    at = argv.index("--nice")
    if hasattr(os, "nice"):
        os.nice(int(argv[at + 1]))
    del argv[at : at + 2]

from autograder.worker.main import main  # noqa: E402 - after the niceness: importing is the start-up's cost

main(argv)
