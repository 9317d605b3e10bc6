"""The course's grader: `pytest autograder` grades; `python -m autograder` is the rest of its command line.

Its folders are layers, and `LAYERS` lists them in order: a module imports only from its own folder and the
folders listed before it (`course` imports no other folder; `commands` may import them all). Two exceptions:
`worker/wire.py`, the protocol both sides of the trust boundary speak, may be imported from anywhere, and the
package's top-level modules (`__main__.py`, the command line, whose commands are in `commands`; `conftest.py`,
which loads the pytest plugin) stand above every folder. `tests/test_layers.py` reads every import of every module
and holds them to this order.
"""

LAYERS: dict[str, str] = {
    "course": "the course model: lessons, tasks, hints and specs (data/NN-slug.toml, loaded by registry.py and "
    "checked by check.py), where each task's code is (regions.py), the causes a check can name (causes.py)",
    "worker": "the untrusted side, what runs next to the learner's code: the worker's loop (main.py), loading, "
    "the sandbox, the scenario helpers; wire.py is the one module both sides import",
    "kit": "what grading tests use on the trusted side: judgement helpers (checks.py), a graph's grads node by "
    "node (graph_checks.py), PyTorch's values",
    "lessons": "the grading tests, one file per lesson: scenarios and judgements side by side",
    "grading": "the trusted side: a run's state (grader.py: `Grader`; the `learner` fixture's objects in "
    "fixtures.py; the reference's answers, computed, shipped and recorded, in reference.py; the learner's files, "
    "read once, and what workers must not see in learner_files.py; each task resolved once in tasks.py) and "
    "the pytest hooks that drive it (plugin.py), which task a failure is charged to (blame.py, from what each "
    "check runs through; settle.py, as each check runs), each judgement's CPU limit (judging.py), the one "
    "runner, results (one `Status` model) and the one "
    "writer of learner text (scorecard.py: scorecard, next step, checks not run), the worker pool (pool.py; a "
    "worker's handle in handle.py, a call's CPU budget in budget.py, how workers start in launchers.py), "
    "the isolation level (isolation.py), the caches, doctor, watch, batch; options.py declares each option of "
    "a grading run once (`GradeOptions`: pytest's options, the subcommands', the notebooks'), and writes the "
    "one command line a child grader gets",
    "jupyter": "the learner's side of Jupyter: inline graphs, lesson explorer, nbgrader check cells",
    "export": "what is generated from the single source: stubs, learner notebooks (notebooks.py), the nbgrader "
    "course (nbgrader_course.py; the lesson's code each notebook holds, lesson_code.py), Classroom template, "
    "Gradescope bundle and its results.json, PrairieLearn's, student edition (its recorded examples in "
    "recorded_examples.py), the class report "
    "(class_report.py), and `dev build`, which regenerates them all",
    "commands": "the command line's commands, one module per reader (learners.py, instructors.py, "
    "maintainers.py): each command's handler and its arguments, which `__main__.py`, the only module that "
    "imports this folder, lists in `READERS`",
}
