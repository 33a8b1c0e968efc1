"""The Python half's import rules: serving and training share only massgen_rl_common, and no module of the three
packages imports itself back through others (imports inside functions count, so a circle cannot hide there)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from conftest import PYTHON_DIR

PACKAGES = ("massgen_rl_common", "massgen_rl_serving", "massgen_rl_training")
# What each package may import of the others.
ALLOWED = {
    "massgen_rl_common": set(),
    "massgen_rl_serving": {"massgen_rl_common"},
    "massgen_rl_training": {"massgen_rl_common"},
}


def module_files(root: Path) -> dict[str, tuple[Path, bool]]:
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Every module's imports of modules of the packages, wherever in the file they are written."""
    modules = module_files(root)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, (path, is_package) in modules.items():
        package = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                # `from .x import y`: y when it is a module of its own, else x
                targets = [f"{base}.{a.name}" for a in node.names] if not node.module else [base]
                targets += [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
            else:
                continue
            graph[module] |= {t for t in map(known, targets) if t and t != module}
    return graph


def test_serving_and_training_share_only_common():
    graph = import_graph(PYTHON_DIR)
    assert len(graph) > 60
    crossings = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if (a := m.split(".")[0]) != (b := t.split(".")[0]) and b not in ALLOWED[a]
    )
    assert crossings == []


def test_no_import_cycle():
    graph = import_graph(PYTHON_DIR)
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as err:  # pragma: no cover - the message names the circle
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from None


def test_the_rules_catch_a_crossing_and_a_circle(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "massgen_rl_serving" / "a.py").write_text("def f():\n    from . import b\n")
    (tmp_path / "massgen_rl_serving" / "b.py").write_text("from .a import f\nfrom massgen_rl_training import x\n")
    (tmp_path / "massgen_rl_training" / "x.py").write_text("from massgen_rl_common import y\n")
    graph = import_graph(tmp_path)
    assert graph["massgen_rl_serving.a"] == {"massgen_rl_serving.b"}
    assert graph["massgen_rl_serving.b"] == {"massgen_rl_serving.a", "massgen_rl_training", "massgen_rl_training.x"}
    assert graph["massgen_rl_training.x"] == {"massgen_rl_common"}
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError:
        pass
    else:
        raise AssertionError("the circle a -> b -> a was not found")
