"""Makes `pytest autograder` a grader: loads the grading plugin (options, fixtures `learner` and `reference`, hooks)
and lays its checks out task by task, as an editor's Testing panel shows them; `--results-json` writes
Gradescope's results.json."""

pytest_plugins = ["autograder.grading.plugin", "autograder.grading.tasknodes", "autograder.export.gradescope"]
