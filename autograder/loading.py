"""Load the learner's code so that each task is graded on its own.

A task's tests run the learner's code for *that task only*, over the reference
version of everything else:

- `load_module` executes one learner file in a fresh private package whose
  sibling modules are the reference ones (the learner's `nn.py` imports the
  reference `Value`), then swaps in the reference for the top-level functions
  and classes that belong to other tasks;
- `hybrid_value` makes a `Value` class that is the reference's except for the
  task's own methods (and helper methods the learner added), so that
  `__pow__`'s tests do not depend on the learner's `__add__`.

Any failure to load a file (missing, syntax error, an exception or `sys.exit`
at import) becomes a `LearnerCodeError` that names the file and line.
"""

from __future__ import annotations

import builtins
import importlib
import itertools
import sys
import traceback
import types
from functools import cache
from pathlib import Path

from .regions import all_regions, module_of, owners_of

_counter = itertools.count()
_load_failures: dict[tuple[Path, int], tuple[str, bool]] = {}


class LearnerCodeError(Exception):
    """The learner's file could not be loaded; the message says where and why."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


# Learner files may not import these: the grader, the reference it compares against, the test runner.
FORBIDDEN_IMPORTS = ("autograder", "solutions", "pytest", "_pytest", "pluggy")


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002 - __import__'s own names
    if level == 0 and name.split(".")[0] in FORBIDDEN_IMPORTS:
        raise ImportError(f"exercise code may not import {name!r}: it is the grader's (or the reference's)")
    return builtins.__import__(name, globals, locals, fromlist, level)


def guarded_builtins() -> dict:
    """The builtins a learner file runs with: the usual ones, with an `__import__` that refuses the grader."""
    return {**vars(builtins), "__import__": _guarded_import}


def reference(module: str) -> types.ModuleType:
    return importlib.import_module(f"solutions.{module}")


def reference_modules() -> list[str]:
    return sorted({r.module for r in all_regions()} | {"engine"})


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@cache
def _compile(path: Path, mtime_ns: int) -> types.CodeType:
    return compile(path.read_bytes(), str(path), "exec", dont_inherit=True)


def where_in(exc: BaseException, root: Path) -> str:
    """The innermost `file:line in function` of a traceback that lies inside `root`."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_inside(f.filename, root)]
    if not frames:
        return ""
    f = frames[-1]
    return f"{_display(Path(f.filename))}:{f.lineno} in {f.name}"


def _is_inside(filename: str, root: Path) -> bool:
    try:
        Path(filename).resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError):
        return False


def load_module(root: Path, module: str, own_names: frozenset[str] = frozenset()) -> types.ModuleType:
    """Execute `root/module.py` over the reference siblings; return the fresh module.

    Top-level names that other tasks own are replaced by the reference's, unless
    they are in `own_names`.
    """
    path = root / f"{module}.py"
    if not path.is_file():
        raise LearnerCodeError(f"{_display(path)} is missing: the graded folder needs every file of exercises/")
    try:
        code = _compile(path, path.stat().st_mtime_ns)
    except SyntaxError as exc:
        raise LearnerCodeError(
            f"{_display(path)}:{exc.lineno}: {type(exc).__name__}: {exc.msg}"
            f" (every task in {path.name} needs this file to load)") from None
    failure = _load_failures.get((path, path.stat().st_mtime_ns))
    if failure:
        raise LearnerCodeError(*failure)
    package = f"_graded_{next(_counter)}"
    pkg = types.ModuleType(package)
    pkg.__path__ = []
    mod = types.ModuleType(f"{package}.{module}")
    mod.__file__, mod.__package__ = str(path), package
    mod.__builtins__ = guarded_builtins()
    installed = {package: pkg, mod.__name__: mod}
    installed.update({f"{package}.{sib}": reference(sib) for sib in reference_modules() if sib != module})
    sys.modules.update(installed)
    try:
        exec(code, mod.__dict__)
    except BaseException as exc:  # noqa: BLE001 - SystemExit and the timeout too: the grader must go on
        timed_out = type(exc).__name__ == "Failed" and "Timeout" in str(exc)
        what = "took too long" if timed_out else f"raised {type(exc).__name__}: {exc}"
        failure = (f"importing {_display(path)} {what} ({where_in(exc, root) or 'at import'})", timed_out)
        _load_failures[(path, path.stat().st_mtime_ns)] = failure  # fail the file's other tests at once
        raise LearnerCodeError(*failure) from None
    finally:
        for name in installed:
            sys.modules.pop(name, None)
    ref = reference(module)
    for owner in {r.owner.split(".")[0] for r in all_regions() if r.module == module}:
        if owner not in own_names and hasattr(ref, owner):
            setattr(mod, owner, getattr(ref, owner))
    return mod


def _rebind(obj, namespace: dict):
    """The same function (or descriptor) with its global names looked up in `namespace`."""
    if isinstance(obj, types.FunctionType):
        new = types.FunctionType(obj.__code__, namespace, obj.__name__, obj.__defaults__, obj.__closure__)
        new.__kwdefaults__, new.__qualname__, new.__doc__ = obj.__kwdefaults__, obj.__qualname__, obj.__doc__
        return new
    if isinstance(obj, (staticmethod, classmethod)):
        return type(obj)(_rebind(obj.__func__, namespace))
    if isinstance(obj, property):
        return property(*(f and _rebind(f, namespace) for f in (obj.fget, obj.fset, obj.fdel)), obj.__doc__)
    return obj


def hybrid_value(learner_engine: types.ModuleType, methods: frozenset[str]) -> type:
    """The reference `Value`, with `methods` (and any helper the learner added) taken from the learner.

    Every function, the learner's and the reference's, sees this hybrid class
    under the global name `Value`, so the Values it creates are hybrids too.
    """
    ref_module = reference("engine")
    ref_cls, learner_cls = ref_module.Value, getattr(learner_engine, "Value", None)
    if not isinstance(learner_cls, type):
        raise LearnerCodeError(f"{learner_engine.__file__} defines no class Value")
    hybrid = type("Value", (), {})
    ref_ns = {**vars(ref_module), "Value": hybrid}
    learner_ns = {**vars(learner_engine), "Value": hybrid}
    skip = {"__dict__", "__weakref__", "__module__", "__qualname__"}
    for name, attr in vars(ref_cls).items():
        if name not in skip:
            setattr(hybrid, name, _rebind(attr, ref_ns))
    for name, attr in vars(learner_cls).items():
        helper = not name.startswith("__") and name not in vars(ref_cls)
        if name in methods or helper:
            setattr(hybrid, name, _rebind(attr, learner_ns))
    missing = sorted(m for m in methods if m not in vars(learner_cls))
    if missing:
        raise LearnerCodeError(f"{learner_engine.__file__}: class Value has no method {', '.join(missing)}")
    hybrid.__module__ = ref_cls.__module__
    return hybrid


class Implementation:
    """The graded code as one task's tests see it: `impl.Value`, `impl.nn`, `impl.graph`, ..."""

    def __init__(self, root: Path, task_id: str):
        self.root, self.task_id = root, task_id
        self.module_name = module_of(task_id)
        self._owners = owners_of(task_id)
        self._loaded: dict[str, types.ModuleType] = {}
        self._value: type | None = None

    def module(self, name: str) -> types.ModuleType:
        """The learner's module when it holds this task, the reference module otherwise."""
        if name != self.module_name:
            return reference(name)
        if name not in self._loaded:
            own = frozenset(o.split(".")[0] for o in self._owners)
            self._loaded[name] = load_module(self.root, name, own)
        return self._loaded[name]

    @property
    def Value(self) -> type:  # noqa: N802 - reads like the class it is
        if self.module_name != "engine":
            return reference("engine").Value
        if self._value is None:
            methods = frozenset(o.split(".", 1)[1] for o in self._owners if o.startswith("Value."))
            self._value = hybrid_value(self.module("engine"), methods)
        return self._value

    def __getattr__(self, name: str) -> types.ModuleType:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.module(name)
