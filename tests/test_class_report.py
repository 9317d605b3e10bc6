"""The class report, on real grading: a small class graded by `python -m autograder batch`, read back three ways.

The class: the reference, the stubs, and copies of the reference each with one or two classic bugs, in known
proportions. The report's counts (CSV, and the HTML as headless Chromium shows it) must be those proportions;
the same results as Gradescope's and PrairieLearn's files give the same table; hostile strings stay text; names
appear only with `--names`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from autograder.export import prairielearn
from autograder.grading.results import Results

from .conftest import REPO, copy_of
from .test_site import chromium  # noqa: F401 - the module's browser fixture

ACCUMULATE = (
    "engine.py",
    "            self.grad += out.grad\n            other.grad += out.grad\n",
    "            self.grad = out.grad\n            other.grad = out.grad\n",
)
TANH_FROM_INPUT = ("engine.py", "(1 - t**2) * out.grad", "(1 - self.data**2) * out.grad")
TANH_ONE_MINUS_T = ("engine.py", "(1 - t**2) * out.grad", "(1 - t) * out.grad")
CLASS = {  # submission -> its bugs
    "ref": (),
    "acc1": (ACCUMULATE,),
    "acc2": (ACCUMULATE,),
    "tanh": (TANH_FROM_INPUT,),
    "both": (ACCUMULATE, TANH_ONE_MINUS_T),
}


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "autograder", *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded by batch: (its results folder, the report's folder)."""
    tmp = tmp_path_factory.mktemp("class")
    folder = tmp / "submissions"
    folder.mkdir()
    for name, bugs in CLASS.items():
        sub = copy_of("solutions", folder, name)
        for file, old, new in bugs:
            text = (sub / file).read_text()
            assert text.count(old) == 1
            (sub / file).write_text(text.replace(old, new))
    copy_of("exercises", folder, "stubs")
    shutil.rmtree(folder / "stubs" / "notebooks", ignore_errors=True)
    run = _run("batch", str(folder), "--out", str(tmp / "grades.csv"), "--jobs", "2", "--quiet")
    assert run.returncode == 0, run.stdout + run.stderr
    return tmp / "grades.results", tmp


def _report(tmp, *paths, extra=()):
    out = tmp / "report.html"
    run = _run("class-report", *map(str, paths), "--out", str(out), *extra)
    assert run.returncode == 0, run.stdout + run.stderr
    return out.read_text(), list(csv.DictReader(io.StringIO(out.with_suffix(".csv").read_text())))


def _tasks(rows):
    return {r["task"]: r for r in rows if not r["cause"] and not r["cause name"]}


def _causes(rows):
    return {(r["task"], r["cause"] or r["cause name"]): int(r["submissions"]) for r in rows if r["cause name"]}


def test_the_csv_counts_the_known_proportions(graded, tmp_path):
    results, _ = graded
    html, rows = _report(tmp_path, results)
    tasks, causes = _tasks(rows), _causes(rows)
    assert {k: tasks["5.1"][k] for k in ("passed", "failed", "not started")} == {
        "passed": "3",
        "failed": "2",
        "not started": "1",
    }
    assert causes[("5.1", "tanh-derivative-from-input")] == 1
    assert causes[("5.1", "tanh-derivative-one-minus-t")] == 1
    # the = bug fails 7.1 on its own in acc1, acc2 and both (its reuse checks of + need no tanh); 7.1 waits for
    # the broken tanh in `tanh`, and for the stubs' 5.1 in `stubs`
    assert (tasks["7.1"]["passed"], tasks["7.1"]["failed"], tasks["7.1"]["waits"]) == ("1", "3", "2")
    assert causes[("7.1", "accumulate-with-plus-equals")] == 3
    share = next(r["share"] for r in rows if r["cause"] == "accumulate-with-plus-equals")
    assert float(share) == pytest.approx(3 / 6, abs=1e-3)
    # most frequent first within a task
    order = [r["submissions"] for r in rows if r["task"] == "7.1" and r["cause name"]]
    assert order == sorted(order, key=int, reverse=True)
    revisit = {r["cause"]: r["revisit"] for r in rows if r["cause"]}
    assert revisit["accumulate-with-plus-equals"] == "course/07-accumulation.md#task-7-1"
    assert tasks["2.1"]["passed"] == "5" and tasks["2.1"]["not started"] == "1"
    # every other task: the bugs leave it alone
    for tid, row in tasks.items():
        if tid not in ("5.1", "7.1") and not tid.startswith("12.5"):
            assert int(row["failed"]) == 0, (tid, row)
    # no student's name by default
    assert "acc1" not in html and "stubs" not in html and all("acc1" not in json.dumps(r) for r in rows)


def test_the_page_shows_the_same_counts_in_chromium_and_asks_no_other_host(graded, tmp_path, chromium):  # noqa: F811
    results, _ = graded
    _report(tmp_path, results)
    page = chromium.new_page()
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((tmp_path / "report.html").as_uri())
    assert page.locator("#summary b").inner_text() == "6"
    cell = page.locator('#tasks tr[data-task="7.1"] td[data-state="failed"]')
    assert cell.inner_text() == "3"
    assert page.locator('#tasks tr[data-task="5.1"] td[data-state="passed"]').inner_text() == "3"
    row = page.locator('table.causes tr[data-cause="accumulate-with-plus-equals"]')
    assert row.count() == 1 and "50%" in row.inner_text() and "sets the grad" in row.inner_text()
    stops = {el.get_attribute("data-task"): el.get_attribute("data-count") for el in page.locator("text.stop").all()}
    assert stops == {"1.1": "1", "5.1": "2", "7.1": "2", "": "1"}, stops
    lesson1 = page.locator('g.lesson[data-lesson="1"]').get_attribute("data-mean")
    assert float(lesson1) == pytest.approx(5 / 6, abs=1e-3)
    box = page.locator("svg.plot").first.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 100  # the plot is drawn
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert all(u.startswith("file://") for u in requests), requests
    page.close()


def test_gradescope_and_prairielearn_files_give_the_same_table(graded, tmp_path):
    results, _ = graded
    _, own = _report(tmp_path / "own", results)
    gs, pl = tmp_path / "export", tmp_path / "pl"
    meta = []
    for i, sub in enumerate(sorted(p for p in results.iterdir() if p.is_dir())):
        (gs / f"submission_{i}").mkdir(parents=True)
        shutil.copy(sub / "gradescope.json", gs / f"submission_{i}" / "results.json")
        meta.append(f"submission_{i}:\n  :submitters:\n  - :name: Student {sub.name}\n")
        (pl / sub.name).mkdir(parents=True)
        data = prairielearn.results_json(Results.from_json(json.loads((sub / "results.json").read_text())))
        (pl / sub.name / "results.json").write_text(json.dumps(data))
    (gs / "submission_metadata.yml").write_text("".join(meta))
    html, rows = _report(tmp_path / "gs", gs, extra=("--names",))
    assert _tasks([{k: v for k, v in r.items() if k != "who"} for r in rows]) == _tasks(own)
    assert _causes(rows) == _causes(own)
    who = next(r["who"] for r in rows if r["cause"] == "accumulate-with-plus-equals")
    assert sorted(who.split("; ")) == ["Student acc1", "Student acc2", "Student both"]
    assert "Student acc1" in html
    _, from_pl = _report(tmp_path / "pl", pl)
    assert _tasks(from_pl) == _tasks(own)
    named = {k: v for k, v in _causes(own).items() if not k[1].startswith("no named cause")}
    assert {k: v for k, v in _causes(from_pl).items() if not k[1].startswith("no named cause")} == named


def test_hostile_strings_stay_text(tmp_path):
    bad = "<script>alert(1)</script>"
    data = {
        "graded": bad,
        "impl_option": "",
        "isolation": "processes",
        "selected": ["2.1"],
        "tests": [
            {
                "nodeid": "x::" + bad,
                "description": bad,
                "task": "2.1",
                "points": 1,
                "hint": "",
                "status": "failed",
                "message": bad,
                "cause": bad,  # not an id of the course: counted as no named cause, under its check
            },
            {"nodeid": "y", "description": "d", "task": bad, "points": 1, "hint": "", "status": "failed"},
        ],
    }
    (tmp_path / "in" / bad.replace("/", "_")).mkdir(parents=True)
    (tmp_path / "in" / bad.replace("/", "_") / "results.json").write_text(json.dumps(data))
    html, rows = _report(tmp_path, tmp_path / "in", extra=("--names",))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert _causes(rows) == {("2.1", f"no named cause: failed check “{bad}”"): 1}
    assert _tasks(rows)["2.1"]["failed"] == "1" and set(_tasks(rows)) == {"2.1"}
