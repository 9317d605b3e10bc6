"""The grader's folders are its layers (`autograder.LAYERS`, in order): a module imports only from its own folder and
the folders listed before it, and no module imports itself back through others. Read from the code: every `import`,
at any depth of a module, against the order the package declares."""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import REPO

PACKAGE = REPO / "autograder"
SHARED = "autograder.worker.wire"  # the protocol both sides import: below every layer


def layer_order() -> list[str]:
    """The folders of `autograder/`, in the order the package declares them."""
    import autograder

    return list(autograder.LAYERS)


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Each module of the grader and the modules of the grader it imports."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name, targets = module_name(path), set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base]).strip(".")
                targets.add(base)
                targets.update(f"{base}.{a.name}" for a in node.names)
        found[name] = {t for t in targets if t.startswith("autograder")}
    modules = set(found)
    return {m: {t for t in ts if t in modules and t != m} for m, ts in found.items()}


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) else None


def test_the_layers_name_every_folder_of_the_grader():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert set(layer_order()) == folders


def test_no_module_imports_from_a_folder_listed_after_its_own():
    order = layer_order()
    upward = []
    for module, targets in imports().items():
        for target in targets - {SHARED}:
            here, there = layer(module), layer(target)
            if here and there and order.index(there) > order.index(here):
                upward.append(f"{module} -> {target}")
    assert not upward, upward


def test_no_import_cycle():
    graph = imports()
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                cycles.append(path[path.index(target) :] + [target])
            elif target not in seen:
                seen.add(target)
                visit(target, [*path, target])

    seen: set[str] = set()
    for module in sorted(graph):
        if module not in seen:
            seen.add(module)
            visit(module, [module])
    assert not cycles, cycles[:5]
