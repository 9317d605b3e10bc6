"""Inside the worker: the learner's code for one task, over the reference code of its prerequisites.

The trusted side sends the sources: the learner's files, and the reference
with every region turned back into its stub except the prerequisites' (the
earlier lessons' tasks and the ones the registry names), so delegating to the
reference finds nothing for this task or any other. Here they become modules:

- the reference files form the private package `_reference`;
- the learner's file for the task is executed in a private package whose
  sibling modules are the reference ones (the learner's `nn.py` imports the
  reference `Value`), then its top-level functions and classes that belong to
  prerequisites are swapped for the reference's, and the functions and methods
  that hold another task's code (a sibling's) for the reference's stubs: the
  task's code reaches no other task's code, the learner's own included (the
  learner's helpers are theirs to share);
- `hybrid_value` makes a `Value` class whose prerequisite methods are the
  reference's, whose siblings' methods are stubs, and whose every other method
  (the task's own, the learner's helpers) is the learner's, so that `__pow__`'s
  checks do not depend on the learner's `__add__` (an earlier lesson's), while
  `__sub__` cannot call `__truediv__` (a task of its own lesson that it does
  not need), neither the reference's nor the learner's.

A student edition ships no reference: there the learner's own files stand in
for it. This module imports nothing of the grader's: it runs next to learner code.
"""

from __future__ import annotations

import builtins
import importlib.util
import itertools
import sys
import types
from collections.abc import Callable, Iterable

from autograder.worker.wire import Problem

_counter = itertools.count()

# Learner files may not import these: the grader, the reference it compares against, the test runner.
FORBIDDEN_IMPORTS = ("autograder", "solutions", "pytest", "_pytest", "pluggy")


class LearnerCodeError(Exception):
    """The learner's files cannot make what the task needs: `problem` (a `wire.Problem`), in `file`, of `detail`.

    The grader words it (`grading.verdicts`): the worker sends only the problem's name and its subjects.
    """

    def __init__(self, problem: Problem, file: str, detail: str = ""):
        super().__init__(problem, file, detail)
        self.problem, self.file, self.detail = problem, file, detail


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002 - __import__'s own names
    if level == 0 and name.split(".")[0] in FORBIDDEN_IMPORTS:
        raise ImportError(f"exercise code may not import {name!r}: it is the grader's (or the reference's)")
    return builtins.__import__(name, globals, locals, fromlist, level)


def guarded_builtins() -> dict:
    """The builtins a learner file runs with: the usual ones, with an `__import__` that refuses the grader."""
    return {**vars(builtins), "__import__": _guarded_import}


class SourcePackage:  # a meta path finder and its loader (the protocols, without importlib.abc's import cost)
    """A package whose modules are source texts held in memory: `from .engine import Value` works inside it.

    `siblings` supplies the modules it does not hold itself: a learner's file
    then imports the reference's `engine` as its sibling.
    """

    def __init__(
        self,
        name: str,
        sources: dict[str, tuple[str, str]],
        guarded: bool,
        siblings: Callable[[str], types.ModuleType] | None = None,
        sibling_names: Iterable[str] = (),
    ):
        self.name, self.sources, self.guarded = name, sources, guarded
        self.siblings, self.sibling_names = siblings, frozenset(sibling_names)
        package = types.ModuleType(name)
        package.__path__ = []
        package.__package__ = name
        sys.modules[name] = package
        sys.meta_path.insert(0, self)

    def find_spec(self, fullname, path=None, target=None):
        package, _, module = fullname.rpartition(".")
        if package == self.name and module in self.sources:
            return importlib.util.spec_from_loader(fullname, self, origin=self.sources[module][1])
        if package == self.name and module in self.sibling_names:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        module = spec.name.rpartition(".")[2]
        return None if module in self.sources else self.siblings(module)

    def exec_module(self, module: types.ModuleType) -> None:
        package, _, name = module.__name__.rpartition(".")
        if package != self.name:
            return  # a sibling from elsewhere, already executed
        source, filename = self.sources[name]
        module.__file__ = filename
        if self.guarded:
            module.__builtins__ = guarded_builtins()
        exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)

    def module(self, name: str) -> types.ModuleType:
        if name not in self.sources and name not in self.sibling_names:
            raise LearnerCodeError(Problem.FILE_MISSING, f"{name}.py")
        return importlib.import_module(f"{self.name}.{name}")


def where_in(exc: BaseException, files: set[str]) -> tuple[str, str]:
    """The innermost `file:line in function` of a traceback that lies in `files`, and that function's qualified name.

    The qualified name (`Value.__add__`, `Value.__add__.<locals>._backward`) tells
    the grader which task's code raised.
    """
    found, tb = None, exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in files:
            found = (code.co_filename, tb.tb_lineno, code.co_name, code.co_qualname)
        tb = tb.tb_next
    if found is None:
        return "", ""
    filename, line, name, qualname = found
    return f"{filename}:{line} in {name}", qualname


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


def hybrid_value(
    ref_module: types.ModuleType,
    learner_engine: types.ModuleType,
    methods: frozenset[str],
    prerequisites: frozenset[str] = frozenset(),
    siblings: frozenset[str] = frozenset(),
) -> type:
    """The reference `Value` for the `prerequisites` methods and the `siblings` (its stubs), the learner's for the rest.

    `methods` (the task's own) must be the learner's; any other method the
    learner wrote that holds no other task's code (a helper, a method the course
    gives) is theirs too, so the task's code never reaches another task's: the
    reference sent holds a sibling's code as a stub, and the learner's is not
    taken. Every function, the learner's and the reference's, sees this hybrid
    class under the global name `Value`, so the Values it creates are hybrids too.
    """
    ref_cls, learner_cls = ref_module.Value, getattr(learner_engine, "Value", None)
    if not isinstance(learner_cls, type):
        raise LearnerCodeError(Problem.NO_VALUE, learner_engine.__file__)
    missing = sorted(m for m in methods if m not in vars(learner_cls))
    if missing:
        raise LearnerCodeError(Problem.METHODS_MISSING, learner_engine.__file__, ", ".join(missing))
    hybrid = type("Value", (), {})
    ref_ns = {**vars(ref_module), "Value": hybrid}
    learner_ns = {**vars(learner_engine), "Value": hybrid}
    skip = {"__dict__", "__weakref__", "__module__", "__qualname__"}
    for name, attr in vars(ref_cls).items():
        if name not in skip:
            setattr(hybrid, name, _rebind(attr, ref_ns))
    code = (types.FunctionType, staticmethod, classmethod, property)
    for name, attr in vars(learner_cls).items():
        helper = not name.startswith("__") and name not in vars(ref_cls)
        theirs = isinstance(vars(ref_cls).get(name), code) and name not in prerequisites and name not in siblings
        if name in methods or helper or theirs:
            setattr(hybrid, name, _rebind(attr, learner_ns))
    hybrid.__module__ = learner_engine.__name__
    return hybrid


class Implementation:
    """The graded code as one task's scenarios see it: `impl.Value`, `impl.nn`, `impl.graph`, ...

    `setup` is what the trusted side sent: the task, the file that holds it, the
    task's owners (`Value.__pow__`, `trace`, ...), the owners of the other
    tasks in that file, the learner's sources and (unless this is a student
    edition) the reference's sources without the task's regions.
    """

    def __init__(self, setup: dict):
        self.task_id = setup["task"]
        self.module_name = setup["module"]
        self.owners = frozenset(setup["owners"])
        self.under = frozenset(setup["prerequisite_owners"])  # the reference's, under the task's own code
        self.siblings = frozenset(setup.get("sibling_owners", ()))  # other tasks' code: the reference's stubs
        learner = {name: (src, filename) for name, (src, filename) in setup["learner"].items()}
        self.learner_files = {filename for _, filename in learner.values()}
        serial = next(_counter)
        self._reference = None
        if setup.get("reference"):
            refs = {name: (src, f"<reference {name}.py>") for name, src in setup["reference"].items()}
            self._reference = SourcePackage(f"_reference{serial}", refs, guarded=False)
            mine = {self.module_name: learner[self.module_name]} if self.module_name in learner else {}
            self._learner = SourcePackage(f"_graded{serial}", mine, True, self._reference.module, refs)
        else:  # a student edition: the learner's own files stand in for the reference
            self._learner = SourcePackage(f"_graded{serial}", learner, guarded=True)
        self._swapped = False
        self._value: type | None = None

    def module(self, name: str) -> types.ModuleType:
        """The learner's module when it holds this task, the reference module otherwise."""
        if self._reference is not None and name != self.module_name:
            return self._reference.module(name)
        mod = self._learner.module(name)
        if self._reference is not None and not self._swapped:
            # the prerequisites' functions and classes are the reference's; the rest of the file is the learner's
            ref = self._reference.module(name)
            for owner in {o.split(".")[0] for o in self.under} - {o.split(".")[0] for o in self.owners}:
                if hasattr(ref, owner):
                    setattr(mod, owner, getattr(ref, owner))
            for owner in sorted(self.siblings):  # another task's code, the learner's too: the reference's stub
                top, _, method = owner.partition(".")
                if not hasattr(ref, top):
                    continue
                if not method:
                    setattr(mod, top, getattr(ref, top))
                elif isinstance(getattr(mod, top, None), type) and getattr(mod, top) is not getattr(ref, top):
                    setattr(getattr(mod, top), method, vars(getattr(ref, top))[method])
            self._swapped = True
        return mod

    @property
    def Value(self) -> type:  # noqa: N802 - reads like the class it is
        if self._value is None:
            if self._reference is None:
                self._value = self._learner.module("engine").Value
            elif self.module_name != "engine":
                self._value = self._reference.module("engine").Value
            else:
                methods, under, siblings = (
                    frozenset(o.split(".", 1)[1] for o in owners if o.startswith("Value."))
                    for owners in (self.owners, self.under, self.siblings)
                )
                engine = self._reference.module("engine")
                self._value = hybrid_value(engine, self.module("engine"), methods, under, siblings)
        return self._value

    def __getattr__(self, name: str) -> types.ModuleType:
        known = self._learner.sources.keys() | self._learner.sibling_names
        if name.startswith("_") or name not in known:
            raise AttributeError(name)  # so that hasattr() and getattr(..., default) behave
        return self.module(name)
