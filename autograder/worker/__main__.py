"""`python -m autograder.worker ...`: how the trusted side starts a worker process (see `main`)."""

import sys

from autograder.worker.main import main

main(sys.argv[1:])
