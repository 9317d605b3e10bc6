"""Check a grading run's results.json: `full` (every task passed, full marks) or `zero` (every task not started).

    python tests/platforms/check_results.py results.json full|zero

CI's learner runs (`.ci/run` as an unprivileged user, `.github/workflows/ci.yml` on macOS and Windows) use it.
"""

import json
import sys

results = json.load(open(sys.argv[1], encoding="utf-8"))
statuses = set(results["extra_data"]["status"].values())
expected = {"full": {"passed"}, "zero": {"not started"}}[sys.argv[2]]
if statuses != expected or (results["score"] == 0) != (sys.argv[2] == "zero"):
    sys.exit(
        f"{sys.argv[1]}: score {results['score']}/{results['extra_data']['max_score']}, statuses {sorted(statuses)}"
    )
print(f"{sys.argv[1]}: {results['score']}/{results['extra_data']['max_score']}, every task {expected.pop()}")
