"""A student edition's recorded examples: the reference's answer to each learner notebook's example.

A student edition has no reference code, so its notebooks compare the learner's answers with these, recorded when
the edition is made (`record_examples`, into `autograder.jupyter.EXAMPLES_FILE`), and say so
(`HOW_EXAMPLES_RUN_IN_EDITION`, in place of `notebooks.HOW_EXAMPLES_RUN`).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path

from autograder import jupyter
from autograder.export.notebooks import EXAMPLES

# what a student edition's notebooks say instead (`export/edition.py`): it has no reference code
HOW_EXAMPLES_RUN_IN_EDITION = (
    "Each example below runs with **your** code (this edition has no reference code, so your code runs for "
    "everything), then is compared with the **reference's answer**, recorded when this edition was made, and "
    "says where yours first differs. Where no answer was recorded, it says that no comparison is available."
)


class _Recorder:
    """What `lesson` is while `record_examples` runs a notebook's example cells: each example, run on the reference."""

    def __init__(self, number: int):
        self.number, self.answers = number, {}

    def compare(self, example: Callable) -> Callable:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            result = example(jupyter.Lesson(self.number, "solutions").objects())
        self.answers[jupyter.example_key(self.number, example)] = {
            "printed": printed.getvalue(),
            "shown": jupyter.plain(result),
            "kind": type(result).__name__,
        }
        return example


def record_examples(path: Path) -> None:
    """Record the reference's answer to every learner notebook's example, for a student edition's notebooks."""
    answers = {}
    for number, examples in sorted(EXAMPLES.items()):
        recorder = _Recorder(number)
        scope = {"lesson": recorder, "draw_dot": jupyter.draw_dot}
        for _, code in examples:
            exec(compile(code, f"<lesson {number} example>", "exec"), scope)
        answers.update(recorder.answers)
    path.write_text(json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
