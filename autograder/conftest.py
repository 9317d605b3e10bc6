"""Makes `pytest autograder` a grader: loads the grading plugin (options, fixtures `learner` and `reference`, hooks)."""

pytest_plugins = ["autograder.grading.plugin"]
