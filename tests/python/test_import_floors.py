#!/usr/bin/python3
"""The Python tools' own modules import each other on floors, never in a circle.

Every tools/python/**/*.py is parsed (ast: nothing is imported or run, so no
torch is needed) and each import statement naming one of the project's own
modules is an edge, at the top of a file or inside a function alike: an import
inside a function is still an arrow, only a later one (the circle this test
was written against, the families and the exporter, hid in function bodies).
`from families import gpt` is an edge to `families` and to `families.gpt`;
relative imports (`from . import gpt`) are resolved inside their package.

Two rules, each failing with the edges that break it:

1. No circle: no module reaches itself through its own imports.
2. No import runs up a floor. The floors, lowest first:

   1  files       the readers and writers of files, standard library and numpy:
                  safe_write (the one writer), pickle_reader, torch_file (every
                  PyTorch file), safetensors_io, model_files, numpy_reference,
                  reference_cases, reference_readme
   2  models      the PyTorch twins and the tinyformer file's writer:
                  tinyformer_writer, position_schemes, torch_modules, and the
                  families package (the upstream families' modules and converters)
   3  exporter    tinyformer_export (the command line and check(), dispatching to
                  the families)
   4  programs    everything else: the scripts that make references, fixtures and
                  toy models, the trace tools, the training scripts and examples/

   A module may import from its own floor (the circle rule still applies there)
   or any floor below. A new module lands on floor 4 until it is named here.
"""

import ast
import sys
import tempfile
import unittest
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "python"

FLOORS = {
    1: ["safe_write", "pickle_reader", "torch_file", "safetensors_io", "model_files", "numpy_reference", "q8_0",
        "reference_cases", "reference_readme"],
    2: ["tinyformer_writer", "position_schemes", "torch_modules", "families"],
    3: ["tinyformer_export"],
}
PROGRAMS = 4


def floor_of(module):
    """The floor of a dotted module name (a package's members share its floor)."""
    top = module.split(".")[0]
    for floor, names in FLOORS.items():
        if top in names:
            return floor
    return PROGRAMS


def modules_under(root):
    """{dotted name: path} of every .py file under root (a package's
    __init__.py is the package's own name)."""
    out = {}
    for path in sorted(Path(root).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            out[".".join(parts)] = path
    return out


def _with_parents(name):
    """'families.gpt' -> ['families', 'families.gpt']: importing a member runs its package."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def imports_of(module, path, known):
    """[(imported module, line)] of the project's own modules `module` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module
            names = [stem] + [f"{stem}.{alias.name}" for alias in node.names]
        for name in names:
            for target in _with_parents(name):
                if target in known and target != module:
                    found.append((target, node.lineno))
    return found


def import_graph(root):
    """{module: {imported module: first line}} over the project's modules under root."""
    modules = modules_under(root)
    graph = {}
    for module, path in modules.items():
        edges = {}
        for target, line in imports_of(module, path, modules):
            edges.setdefault(target, line)
        graph[module] = edges
    return graph, modules


def circles(graph):
    """Each circle once, as [m0, m1, ..., m0] (depth-first search; a back edge
    closes a circle)."""
    found, seen_keys = [], set()
    state = {}                 # module -> "open" (on the path) or "done"
    path = []

    def visit(m):
        state[m] = "open"
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                cycle = path[path.index(n):] + [n]
                key = frozenset(cycle)
                if key not in seen_keys:
                    seen_keys.add(key)
                    found.append(cycle)
            elif n not in state:
                visit(n)
        path.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def problems(root):
    """One line per circle and per upward import under root; [] when the floors hold."""
    graph, modules = import_graph(root)
    out = []
    for cycle in circles(graph):
        steps = [f"{a} -> {b} ({modules[a].relative_to(root)}:{graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
        out.append("circle: " + ", ".join(steps))
    for m in sorted(graph):
        for n, line in sorted(graph[m].items()):
            if floor_of(n) > floor_of(m):
                out.append(f"upward: {m} (floor {floor_of(m)}) imports {n} (floor {floor_of(n)}) at "
                           f"{modules[m].relative_to(root)}:{line}")
    return out


class ImportFloors(unittest.TestCase):
    def test_the_tools_have_no_circle_and_no_upward_import(self):
        self.assertTrue(TOOLS.is_dir(), TOOLS)
        graph, _ = import_graph(TOOLS)
        self.assertIn("tinyformer_export", graph)            # the walk found the tools
        self.assertIn("families.gpt", graph["tinyformer_export"])
        self.assertEqual(problems(TOOLS), [])

    def test_every_named_module_exists(self):
        # a floor naming a module that was renamed or removed would guard nothing
        modules = modules_under(TOOLS)
        for floor, names in FLOORS.items():
            for name in names:
                self.assertIn(name, modules, f"floor {floor} names {name}, which tools/python does not hold")


class TheCheckItself(unittest.TestCase):
    """The checker on small trees built here: it must see what it is for."""

    def tree(self, files):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        root = Path(folder.name)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        return root

    def test_a_circle_hidden_in_a_function_is_found(self):
        root = self.tree({
            "families/__init__.py": "def write():\n    import tinyformer_export\n",
            "families/gpt.py": "from . import write\n",
            "tinyformer_export.py": "def convert():\n    from families import gpt\n",
        })
        found = problems(root)
        self.assertTrue(any(p.startswith("circle: families -> tinyformer_export") for p in found), found)
        self.assertIn("upward: families (floor 2) imports tinyformer_export (floor 3) at families/__init__.py:2",
                      found)

    def test_a_circle_on_one_floor_is_found(self):
        root = self.tree({"safe_write.py": "import torch_file\n", "torch_file.py": "import safe_write\n"})
        self.assertEqual(problems(root), ["circle: safe_write -> torch_file (safe_write.py:1), "
                                          "torch_file -> safe_write (torch_file.py:1)"])

    def test_a_relative_import_of_a_member_counts(self):
        root = self.tree({"families/__init__.py": "",
                          "families/a.py": "from .b import x\n",
                          "families/b.py": "from families.a import y\n"})
        self.assertEqual(len(problems(root)), 1)

    def test_a_program_may_import_any_floor_and_outside_names_are_ignored(self):
        root = self.tree({"tinyformer_export.py": "import torch, numpy\nimport safe_write\n",
                          "safe_write.py": "import os\n",
                          "examples/train.py": "import tinyformer_export\nfrom families import gpt\n"})
        self.assertEqual(problems(root), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
