"""Imports run one way (read with ``ast``, nothing is imported or run):

    base      torchcourse, paths, textwidth
    course    torchcourse.course.*            (the content model: chapters, links, the appendix table)
    features  runner, progress, quiz, lookup, serve, torchcourse.check (the whole-course check)
    commands  torchcourse.cli, commandline, cli_zh, app_entry, */cli.py, runner.learner
    tui       torchcourse.tui.*

A layer imports only from its own layer and the ones below it; ``tui`` and the commands sit side
by side on top and never import each other (the app is started through ``app_entry``), and nothing
but ``__main__`` imports ``torchcourse.cli``.

Inside the reader package (``torchcourse.tui.reader``) the parts import strictly downward:

    screen (and the package itself)   the coordinator: keys and wiring
    place, navigation, snippets,      the parts; none imports another
    preview
    layout                            lazy mounting, rendering ahead, jumps
    positions                         where things are in the body (read-only)
    blocks                            the widgets a segment becomes

so no part can import the screen (nor the package, which imports the screen), and a module added
to the package must be given its place here.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "torchcourse"
COMMANDS = {"torchcourse.cli", "torchcourse.commandline", "torchcourse.cli_zh", "torchcourse.app_entry", "torchcourse.runner.learner"}
ORDER = {"base": 0, "course": 1, "features": 2, "commands": 3, "tui": 3}
READER = "torchcourse.tui.reader"
READER_ORDER = {READER: 4, f"{READER}.screen": 4, f"{READER}.place": 3, f"{READER}.navigation": 3,
                f"{READER}.snippets": 3, f"{READER}.preview": 3, f"{READER}.layout": 2, f"{READER}.positions": 1, f"{READER}.blocks": 0}


def module_name(path: Path, pkg: Path = PKG) -> str:
    parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> str:
    if module in COMMANDS or module.endswith(".cli"):
        return "commands"
    if module == "torchcourse.__main__":
        return "entry"
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("paths", "textwidth"):
        return "base"
    return {"course": "course", "tui": "tui"}.get(parts[1], "features")


def imports(path: Path, pkg: Path = PKG) -> list[tuple[int, str]]:
    """(line, module) of every torchcourse module this file imports, at any depth of the file."""
    here = module_name(path, pkg)
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "torchcourse"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                package = here.split(".")[: len(here.split(".")) - node.level + (1 if path.name == "__init__.py" else 0)]
                base = ".".join(package + ([base] if base else []))
            if base.split(".")[0] != "torchcourse":
                continue
            for a in node.names:  # `from torchcourse import paths` names a module
                full = f"{base}.{a.name}"
                is_module = (pkg.parent / (full.replace(".", "/") + ".py")).exists() or (pkg.parent / full.replace(".", "/")).is_dir()
                out.append((node.lineno, full if is_module else base))
    return out


def in_reader(module: str) -> bool:
    return module == READER or module.startswith(READER + ".")


def violations(pkg: Path = PKG) -> list[str]:
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        here = module_name(path, pkg)
        mine = layer(here)
        if in_reader(here) and here not in READER_ORDER:
            bad.append(f"{path.relative_to(pkg.parent)}: {here} has no place in the reader's order (READER_ORDER)")
        for line, target in imports(path, pkg):
            theirs = layer(target)
            where = f"{path.relative_to(pkg.parent)}:{line}: {here} ({mine}) imports {target} ({theirs})"
            if target == "torchcourse.cli" and here != "torchcourse.__main__":
                bad.append(where + " — only __main__ may import torchcourse.cli")
            elif mine == "entry":
                continue
            elif {mine, theirs} == {"tui", "commands"} and not (here == "torchcourse.app_entry" and theirs == "tui"):
                bad.append(where + " — the app and the commands never import each other")
            elif ORDER[theirs] > ORDER[mine]:
                bad.append(where + " — a lower layer imports a higher one")
            elif in_reader(here) and in_reader(target) and here != READER and here in READER_ORDER \
                    and READER_ORDER.get(target, 99) >= READER_ORDER[here]:
                bad.append(where + " — a part of the reader imports its own level or above (the screen)")
    return bad


def test_imports_follow_the_layers():
    assert violations() == []


def test_the_rule_catches_an_upward_import(tmp_path):
    # the checker itself can fail: on a copy of the package, a model module importing a feature,
    # a screen importing a CLI module, a feature importing torchcourse.cli
    import shutil

    copy = tmp_path / "torchcourse"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert violations(copy) == violations()
    (copy / "course" / "probe.py").write_text("from torchcourse.quiz.bank import validate_checkpoints\n", encoding="utf-8")
    (copy / "tui" / "probe.py").write_text("def f():\n    from torchcourse.quiz.cli import cmd_quiz\n", encoding="utf-8")
    (copy / "runner" / "probe.py").write_text("from torchcourse import cli\n", encoding="utf-8")
    found = violations(copy)
    assert any(v.startswith("torchcourse/course/probe.py:1:") and "a lower layer imports a higher one" in v for v in found), found
    assert any(v.startswith("torchcourse/tui/probe.py:2:") and "never import each other" in v for v in found), found
    assert any(v.startswith("torchcourse/runner/probe.py:1:") and "only __main__ may import torchcourse.cli" in v for v in found), found


def test_the_reader_parts_import_only_downward(tmp_path):
    # on a copy of the package: the layout importing the screen, a part importing another part
    # (or the package, which imports the screen), a module with no place in the order
    import shutil

    copy = tmp_path / "torchcourse"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__"))
    reader = copy / "tui" / "reader"
    with (reader / "layout.py").open("a", encoding="utf-8") as f:
        f.write("\nfrom torchcourse.tui.reader.screen import ReaderScreen\n")
    with (reader / "place.py").open("a", encoding="utf-8") as f:
        f.write("\ndef f():\n    from .snippets import Snippets\n    from torchcourse.tui.reader import ReaderScreen\n")
    (reader / "probe.py").write_text("from torchcourse.tui.reader.blocks import Prose\n", encoding="utf-8")
    found = violations(copy)
    assert any(v.startswith("torchcourse/tui/reader/layout.py:") and "reader.screen" in v and "imports its own level or above" in v
               for v in found), found
    assert any(v.startswith("torchcourse/tui/reader/place.py:") and "reader.snippets" in v for v in found), found
    assert any(v.startswith("torchcourse/tui/reader/place.py:") and v.endswith("imports torchcourse.tui.reader (tui)"
               " — a part of the reader imports its own level or above (the screen)") for v in found), found
    assert any(v.startswith("torchcourse/tui/reader/probe.py:") and "no place in the reader's order" in v for v in found), found
    assert len(found) == 4, found


# -- no import circles ----------------------------------------------------------------------------

def circles(pkg: Path = PKG) -> list[list[str]]:
    """Every group of modules that import each other round (strongly connected, two or more),
    lazy imports inside functions included: each module of a circle can only be understood, and
    changed, together with the others."""
    graph: dict[str, set[str]] = {}
    for path in sorted(pkg.rglob("*.py")):
        here = module_name(path, pkg)
        graph.setdefault(here, set()).update(t for _line, t in imports(path, pkg) if t != here)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_module_imports_itself_round_a_circle():
    assert circles() == []


def test_the_circle_check_finds_a_circle_through_a_lazy_import(tmp_path):
    import shutil

    copy = tmp_path / "torchcourse"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert circles(copy) == circles()
    (copy / "quiz" / "probe_a.py").write_text("from torchcourse.quiz.probe_b import B\nA = 1\n", encoding="utf-8")
    (copy / "quiz" / "probe_b.py").write_text("B = 2\n\ndef f():\n    from torchcourse.quiz.probe_a import A\n    return A\n", encoding="utf-8")
    assert ["torchcourse.quiz.probe_a", "torchcourse.quiz.probe_b"] in circles(copy)
