"""The notebooks: learner notebooks run headless and draw SVG; nbgrader's real pipeline grades like `pytest autograder`.

The nbgrader part builds the course with `python -m autograder export nbgrader`, runs
`nbgrader generate_assignment`, `autograde` and `export` on three submissions per
lesson (the reference, the unmodified release, an endless loop in one task), and
compares every check cell's score with the grader's own result for the very same
files. By default it covers lessons 3 and 5 (a whole module, and part of
`engine.py`); `NBGRADER_LESSONS=all` (or `1,8,12`) picks others.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import nbformat
import pytest

from autograder.course import registry
from autograder.course.regions import parse
from autograder.export import lesson_code, nbgrader_course, notebooks
from autograder.jupyter import TIMEOUT_VARIABLE, Lesson, difference, dot_to_svg, execute, lesson_budget, run_grader

from .conftest import REPO

LOOP_TIMEOUT = 2  # seconds per check for the submission with an endless loop (the default 10 s is slow to wait for)
_chosen = os.environ.get("NBGRADER_LESSONS", "3,5")
LESSONS = (
    [lesson.number for lesson in notebooks.graded_lessons()]
    if _chosen == "all"
    else [int(n) for n in _chosen.split(",")]
)
STUDENTS = ("reference", "release", "loop")


def solution_cell(nb) -> nbformat.NotebookNode:
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    return cell


def without_markers(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not re.search(r"### (BEGIN|END) SOLUTION", line))


# ---------------------------------------------------------------------------------------------- learner notebooks


def test_learner_notebooks_are_up_to_date():
    assert notebooks.stale_learner_notebooks() == [], "run: python -m autograder dev notebooks"


def test_learner_notebooks_link_the_files_they_edit_and_end_with_the_scorecard():
    """Opened from the repository root, JupyterLab follows the links to exercises/; the last cell grades the lesson."""
    for name, nb in notebooks.learner_notebooks().items():
        links = re.findall(r"\]\((\.\./\w+\.py)\)", nb.cells[0].source)
        assert links and all((notebooks.LEARNER_NOTEBOOKS / link).resolve().is_file() for link in links), name
        assert nb.cells[-1].cell_type == "code" and nb.cells[-1].source == "lesson.grade()", name


def test_difference_names_the_first_difference():
    from solutions.backprop_by_hand import hand_gradients, running_example
    from solutions.graph import draw_dot

    def drawing(wrong_a: bool):
        nodes, grads = running_example(), hand_gradients(2.0, -3.0, 10.0, -2.0)
        for name, node in nodes.items():
            node.grad = 0.0 if wrong_a and name == "a" else grads[name]
        return draw_dot(nodes["L"])

    assert difference(("", drawing(False)), ("", drawing(False))) is None  # the nodes' ids differ: labels count
    found = difference(("", drawing(True)), ("", drawing(False)))
    assert found.startswith("the drawing → node a:") and "grad 0.0000" in found and "grad 6.0000" in found
    assert difference(("", {"x": 14.0000001, "y": 1}), ("", {"x": 14.0, "y": 1})).startswith("the result → x:")
    assert difference(("", {"x": 1.0}), ("", {"x": 1.0 + 1e-12})) is None
    assert difference(("7 nodes\nok\n", None), ("6 nodes\nok\n", None)).startswith("printed line 1:")
    assert "2 items in yours, 3" in difference(("", [1, 2]), ("", [1, 2, 3]))


def compare_verdicts(monkeypatch, lesson: Lesson, example) -> list[str]:
    """What `lesson.compare(example)` displays as Markdown, in the test's own process."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(getattr(obj, "data", repr(obj))))
    lesson.compare(example)
    return [text for text in shown if isinstance(text, str)]


def test_compare_says_where_yours_differs_from_the_reference(monkeypatch, tmp_path):
    """Lesson 4's gradients by hand with a wrong dL/da: the verdict names node a, not only two pictures."""
    source = (REPO / "solutions" / "backprop_by_hand.py").read_text()
    assert source.count('"a": da') == 1
    (tmp_path / "backprop_by_hand.py").write_text(source.replace('"a": da', '"a": 0.0'))

    def gradients_by_hand(m):
        from solutions.graph import draw_dot

        nodes = m.running_example()
        grads = m.hand_gradients(2.0, -3.0, 10.0, -2.0)
        for name, node in nodes.items():
            node.grad = grads[name]
        return draw_dot(nodes["L"])

    verdict = compare_verdicts(monkeypatch, Lesson(4, tmp_path), gradients_by_hand)[-1]
    assert "Where yours differs" in verdict and "node a" in verdict and "grad 6.0000" in verdict, verdict
    (tmp_path / "backprop_by_hand.py").write_text(source)
    verdict = compare_verdicts(monkeypatch, Lesson(4, tmp_path), gradients_by_hand)[-1]
    assert "matches the reference" in verdict, verdict


def test_nbgrader_extensions_off_for_learners_and_on_for_instructors(tmp_path):
    """What a Lab started afterwards loads: nbgrader's server extensions and its lab extension, off then on."""
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path), "JUPYTER_PREFER_ENV_PATH": "0"}
    probe = (
        "import json; from jupyter_server.serverapp import ServerApp; "
        "from jupyterlab_server.config import get_static_page_config as page; "
        "app = ServerApp(); app.find_server_extensions(); "
        "print(json.dumps([{k: v for k, v in app.jpserver_extensions.items() if k.startswith('nbgrader')}, "
        "page(level='all').get('disabledExtensions', {}).get('@jupyter/nbgrader', False)]))"
    )
    for state, enabled in (("off", False), ("on", True)):
        done = subprocess.run(
            [sys.executable, "-m", "autograder", "nbgrader-extensions", state, "--user"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        server, lab_disabled = json.loads(
            subprocess.run(
                [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120, check=True
            ).stdout
        )
        assert server and set(server.values()) == {enabled}, server
        assert lab_disabled is not enabled


def test_graphs_render_without_the_dot_program(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    svg = dot_to_svg('digraph { rankdir=LR; a [shape=record, label="{ a | data 2.0000 }"]; a -> b }')
    assert "<svg" in svg and "data 2.0000" in svg


def run_notebook(nb: nbformat.NotebookNode, cwd: Path, timeout: int = 180) -> nbformat.NotebookNode:
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def outputs(nb) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def svgs(nb) -> list[str]:
    return [o["data"]["image/svg+xml"] for o in outputs(nb) if "image/svg+xml" in o.get("data", {})]


@pytest.mark.parametrize("lesson", [lesson.number for lesson in notebooks.graded_lessons()])
def test_learner_notebook_runs_headless_and_draws(lesson):
    """Whatever the state of exercises/, every cell runs; the figures (the reference's at least) are SVG."""
    path = notebooks.LEARNER_NOTEBOOKS / f"{notebooks.notebook_name(lesson)}.ipynb"
    nb = run_notebook(nbformat.read(path, as_version=4), path.parent)
    errors = [f"{o['ename']}: {o['evalue']}" for o in outputs(nb) if o["output_type"] == "error"]
    assert not errors, errors
    figures = sum(("draw_dot(" in code or "Figure(" in code) for _, code in notebooks.EXAMPLES.get(lesson, []))
    assert len(svgs(nb)) >= figures, f"{len(svgs(nb))} SVG outputs for {figures} figure examples"
    assert all(svg.lstrip().startswith("<svg") for svg in svgs(nb))
    scorecard = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert f"Lesson {lesson:2d}" in scorecard, scorecard[-2000:]  # the last cell graded the lesson


def test_learner_notebook_with_finished_code_shows_both_drawings(tmp_path):
    """Lesson 3 with the reference's code as 'yours': both drawings are inline SVGs, and the verdict says they match."""
    shutil.copy(REPO / "solutions" / "graph.py", tmp_path / "graph.py")
    path = notebooks.LEARNER_NOTEBOOKS / "lesson03.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].source = nb.cells[1].source.replace("Lesson(3)", f"Lesson(3, {str(tmp_path)!r})")
    nb.cells = nb.cells[:-1]  # not the grading cell: this test is about the examples
    nb = run_notebook(nb, path.parent)
    drawings = svgs(nb)
    assert len(drawings) == 2 and all(d.count('class="node"') == 10 for d in drawings)  # 7 Values, 3 operations
    verdicts = [o["data"]["text/markdown"] for o in outputs(nb) if "text/markdown" in o.get("data", {})]
    assert any("Yours matches the reference" in v for v in verdicts), verdicts


def test_a_module_that_loops_at_import_is_stopped():
    with pytest.raises(TimeoutError, match="after 0.5 s of CPU time: is there an endless loop"):
        execute("while True:\n    pass\n", "endless.py", "endless", seconds=0.5)


def test_the_kernels_time_limit_counts_cpu_time_not_the_clock():
    """Like the grader's workers: time the learner's code spends waiting (a busy machine, a sleep) is not spent
    from its budget; code that only waits is stopped at the backstop, `BACKSTOP` times the limit, and says so."""
    waits = "import time\ntime.sleep(0.3)\nDONE = True\n"
    assert execute(waits, "waits.py", "waits", seconds=0.1).DONE  # 0.3 s of the clock, next to no CPU time
    with pytest.raises(TimeoutError, match=r"after waiting 0.5 s: does it wait for something that never comes"):
        execute("import time\ntime.sleep(30)\n", "sleeps.py", "sleeps", seconds=0.05)


# ------------------------------------------------------------------------------------- the nbgrader course, static


def test_nbgrader_cells_are_the_grading_tests_with_their_points():
    """One autograder-test cell per test pytest collects, with the test's points; hidden ones between the markers."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "autograder", "--collect-only", "-q", "--impl", "solutions"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    collected = set(re.findall(r"^autograder/lessons/test_\w+\.py::task [^:]+::(test_\w+)$", done.stdout, re.MULTILINE))
    assert collected, done.stdout[-2000:] + done.stderr[-2000:]
    cells = {}
    for lesson in notebooks.graded_lessons():
        nb = nbgrader_course.nbgrader_notebook(lesson.number)
        nbformat.validate(nb)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade"):
                cells[meta["grade_id"]] = (lesson.number, meta["points"], cell.source)
            elif cell.cell_type == "markdown" or meta.get("locked"):
                assert not re.search(r"(BEGIN|END) (SOLUTION|HIDDEN TESTS)", cell.source), cell.source
    capstone = {t.name for t in nbgrader_course.grading_tests() if registry.task(t.task).runs_whole}
    assert set(cells) == collected - capstone  # a capstone runs the whole course, not one notebook's code
    for test in nbgrader_course.grading_tests():
        if test.name in capstone:
            continue
        lesson, points, source = cells[test.name]
        assert (lesson, points) == (registry.task(test.task).lesson, test.points)
        call = f'check("{test.name}")'
        hidden = f"### BEGIN HIDDEN TESTS\n{call}\n### END HIDDEN TESTS"
        assert (hidden in source) if test.hidden else (call in source and "HIDDEN" not in source)


def test_nbgrader_answer_cell_holds_every_region_of_the_lesson():
    for lesson in notebooks.graded_lessons():
        answer = solution_cell(nbgrader_course.nbgrader_notebook(lesson.number)).source
        magic, _, code = answer.partition("\n")
        assert re.fullmatch(r"%%answer lesson\d\d_code/\w+\.py", magic)
        compile(code, magic, "exec")
        regions = parse(code, Path(magic).stem)
        own = {t.id for t in lesson.tasks if not t.runs_whole}  # a capstone has no code of its own
        assert own <= {t for r in regions for t in r.tasks}, lesson.number
        assert all(own & set(r.tasks) for r in regions), "only this lesson's regions keep their markers"


def test_nbgrader_config_gives_a_cell_the_time_to_grade_the_largest_lesson(tmp_path, monkeypatch):
    from nbgrader.preprocessors import Execute
    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.delenv(TIMEOUT_VARIABLE, raising=False)
    (tmp_path / "nbgrader_config.py").write_text(nbgrader_course.nbgrader_config())
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    most = max(len(nbgrader_course.lesson_tests(lesson.number)) for lesson in notebooks.graded_lessons())
    assert Execute(config=config).timeout >= lesson_budget(most) > most * 10
    assert config.CourseDirectory.root == str(tmp_path)


# ---------------------------------------------------------------------------------------- nbgrader's own pipeline


def nbgrader(course: Path, *args: str, env: dict | None = None) -> str:
    done = subprocess.run(
        ["nbgrader", *args],
        check=False,
        cwd=course,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def submission(course: Path, lesson: int, student: str) -> tuple[nbformat.NotebookNode, str | None]:
    """The released notebook, filled in as `student` would: the reference, nothing, or an endless loop.

    The loop goes at the start of the answer's first solution region; the tasks of that region come back too.
    """
    name = notebooks.notebook_name(lesson)
    nb = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
    master = solution_cell(nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)).source
    looping = None
    if student == "reference":
        solution_cell(nb).source = without_markers(master)
    elif student == "loop":
        lines = master.splitlines()
        first = next(i for i, line in enumerate(lines) if "### BEGIN SOLUTION" in line)
        looping = re.search(r"\(task ([\d., ]+)\)", lines[first])[1]  # the tasks whose code now loops
        indent = re.match(r"\s*", lines[first])[0]
        lines[first + 1 : first + 1] = [f"{indent}while True:", f"{indent}    pass"]
        solution_cell(nb).source = without_markers("\n".join(lines))
    return nb, looping


def batches(lessons: list[int]) -> list[list[int]]:
    """Lessons grouped so that no two in a group hold code in the same file (engine.py holds five lessons)."""
    groups: list[tuple[set[str], list[int]]] = []
    for lesson in lessons:
        files = set(lesson_code.lesson_modules(lesson))
        group = next((g for g in groups if not g[0] & files), None)
        if group is None:
            groups.append((set(), []))
            group = groups[-1]
        group[0].update(files)
        group[1].append(lesson)
    return [g[1] for g in groups]


def pytest_results(course: Path, student: str, tmp_path: Path) -> dict[str, dict]:
    """`pytest autograder` on the very files the autograded notebooks saved, with the same time limit per check."""
    results = {}
    for k, lessons in enumerate(batches(LESSONS)):
        folder = tmp_path / f"{student}-{k}"
        folder.mkdir()
        for lesson in lessons:
            name = notebooks.notebook_name(lesson)
            saved = course / "autograded" / student / name / nbgrader_course.code_folder(lesson)
            assert saved.is_dir(), f"the autograded notebook saved no code in {saved}"
            for path in saved.glob("*.py"):
                shutil.copy(path, folder / path.name)
        out = folder.with_suffix(".json")
        graded = run_grader(folder, lessons, out, per_test=LOOP_TIMEOUT if student == "loop" else None)
        for r in graded.tests:
            results[r.nodeid.rsplit("::", 1)[-1]] = asdict(r)
    return results


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory) -> dict:
    """The course generated, released, submitted three times per lesson, autograded and exported by nbgrader.

    Also graded by `pytest autograder`: the files each autograded notebook saved.
    """
    course = tmp_path_factory.mktemp("nbgrader") / "course"
    times: dict[str, float] = {}

    def timed(what: str, *command: str, env: dict | None = None) -> None:
        start = time.perf_counter()
        nbgrader(course, *command, env=env)
        times[what] = time.perf_counter() - start

    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "export",
            "nbgrader",
            "--out",
            str(course),
            *[f"--lesson={n}" for n in LESSONS],
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    times["generate the course"] = time.perf_counter() - start
    looping = {}
    for lesson in LESSONS:
        name = notebooks.notebook_name(lesson)
        timed(f"generate_assignment {name}", "generate_assignment", name, "--force")
        for student in STUDENTS:
            nb, task = submission(course, lesson, student)
            looping[lesson] = task or looping.get(lesson)
            folder = course / ("submitted" if student != "loop" else "later") / student / name
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{name}.ipynb")
        timed(f"autograde {name} (reference, release)", "autograde", name, "--force")  # every student submitted
        shutil.move(course / "later" / "loop" / name, course / "submitted" / "loop" / name)
        timed(
            f"autograde {name} (loop, {LOOP_TIMEOUT} s per check)",
            "autograde",
            name,
            "--student",
            "loop",
            "--force",
            env={TIMEOUT_VARIABLE: str(LOOP_TIMEOUT)},
        )
    timed("export", "export", "--to", str(course / "grades.csv"))
    times["the whole nbgrader cycle"] = sum(times.values())
    print("\n".join(f"{what}: {seconds:.1f} s" for what, seconds in times.items()))
    grading_root = tmp_path_factory.mktemp("pytest-autograder")
    graded = {student: pytest_results(course, student, grading_root) for student in STUDENTS}
    return {"course": course, "looping": looping, "times": times, "pytest": graded}


def gradebook_scores(course: Path, lesson: int, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    name = notebooks.notebook_name(lesson)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {grade.name: grade.score for grade in gb.find_submission_notebook(name, name, student).grades}


@pytest.mark.parametrize("lesson", LESSONS)
def test_nbgrader_scores_match_pytest_autograder(graded_course, lesson):
    course = graded_course["course"]
    tests = nbgrader_course.lesson_tests(lesson)
    full = sum(t.points for t in tests)
    exported = {}
    with open(course / "grades.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["assignment"] == notebooks.notebook_name(lesson):
                exported[row["student_id"]] = float(row["score"])
    looping = {t.strip() for t in graded_course["looping"][lesson].split(",")}
    expected_total = {"reference": full, "release": 0}
    names = {t.name for t in tests}
    for student in STUDENTS:
        by_cell = gradebook_scores(course, lesson, student)
        by_test = {name: r for name, r in graded_course["pytest"][student].items() if name in names}
        earned = {name: (r["points"] if r["status"] == "passed" else 0) for name, r in by_test.items()}
        assert set(by_cell) == set(earned) == names
        assert by_cell == earned, f"{student}: nbgrader and pytest disagree on lesson {lesson}"
        assert sum(by_cell.values()) == exported[student], f"{student}: the gradebook and grades.csv disagree"
        if student in expected_total:
            assert exported[student] == expected_total[student], student
        if student == "loop":  # the looping code costs some of its own tasks' checks, and nothing else
            assert "timed out" in {r["status"] for r in by_test.values() if r["task"] in looping}
            assert {r["status"] for r in by_test.values() if r["task"] not in looping} <= {"passed"}
            assert {r["status"] for r in by_test.values()} <= {"passed", "timed out", "skipped"}


@pytest.mark.parametrize("lesson", LESSONS)
def test_released_notebook_has_no_solutions_and_no_hidden_tests(graded_course, lesson):
    course = graded_course["course"]
    name = notebooks.notebook_name(lesson)
    released = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in released.cells)
    assert not re.search(r"(BEGIN|END) (SOLUTION|HIDDEN TESTS)", text)
    for test in nbgrader_course.lesson_tests(lesson):
        assert (test.name in text) != test.hidden, test.name
    master = solution_cell(nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)).source
    code = master.partition("\n")[2]
    regions = parse(code, "master")
    lines = code.splitlines()
    inside = {line.strip() for r in regions for line in lines[r.begin : r.end - 1]}
    outside = {line.strip() for i, line in enumerate(lines, start=1) if not any(r.begin <= i <= r.end for r in regions)}
    answer = {line.strip() for line in solution_cell(released).source.splitlines()}
    leaked = {line for line in inside - outside if line and not line.startswith("#")} & answer
    assert not leaked, f"solution lines in the released notebook: {leaked}"
    assert solution_cell(released).source.count("raise NotImplementedError()") == len(regions)
