"""The docs name only what exists. For README.md and every docs/*.md page:

- each console script they run or name (``robogym_*``, ``ros2 run robogym_ros X``) is one of setup.py's
  console_scripts; any other ``robogym_*`` name is the package, a name the code spells, or one of
  OTHER_NAMES (a name the code builds);
- each module path (``robogym_ros.x.y``, ``python -m robogym_ros.x``, ``from robogym_ros.x import y``)
  is a module or package of robogym_ros; a name after it (``robogym_ros.task.goals.STAGES``) is
  bound at the top of that module; ``python -m`` names a package with a ``__main__`` or a module
  with a main guard;
- each file path (``robogym_ros/``, ``test/``, ``bench/``, ``recipes/``, ``examples/``, ``config/``, ``launch/``,
  ``docs/``, ``plugins/``, ``.ci/``; a glob matches at least one file; a short ``x/y.py`` is a
  module of the package or of the plugin) and each launch file named (``sim.launch.py``) exists;
- each relative Markdown link resolves, and to a heading of the page where it names one.

The README is the front door: at most README_MAX_LINES lines, a link to every docs page, and the
test command CI runs (``./dev test``). docs/layout.md's table of tiers says what test_tiers.py's
RULES say. The positive controls run each check on docs that name what is missing, or on rules
that differ from the table.
"""
from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest
from test_tiers import ROS, RULES

ROOT = Path(__file__).parents[2]
PACKAGE = "robogym_ros"
README_MAX_LINES = 300
LAYOUT_HEADING = "## The tiers of `robogym_ros/`"
FILE_ROOTS = ("robogym_ros", "test", "bench", "recipes", "examples", "config", "launch", "docs", "plugins", ".ci")
# Short module paths (``expert/holding.py``) are read against these folders, in order.
SHORT_PATH_BASES = ("robogym_ros", "plugins/lerobot_env_robogym")
# robogym_* names that are neither a console script nor spelled out in the code: the code builds them.
OTHER_NAMES = {
    "robogym_sim_simulate_steps": "the sim's helper node for the simulate_steps action (f'{node}_simulate_steps')",
}

FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
SHELL = {"", "bash", "sh", "shell", "console", "zsh"}
NAME = re.compile(r"(?<![\w./-])robogym_\w+")
RUN = re.compile(r"\bros2 run robogym_ros (\S+)")
BIN = re.compile(r"\bbin/(robogym_\w+)")
INLINE_COMMAND = re.compile(r"`(robogym_\w+) -")
MODULE = re.compile(r"(?<![\w/.-])robogym_ros(?:\.\w+)+")
PYTHON_M = re.compile(r"\bpython3? -m ([\w.]+)")
FROM_IMPORT = re.compile(r"^\s*from (robogym_ros[\w.]*) import \(?([\w, ]+)")
PLUGIN_MODULE = re.compile(r"(?<![\w/.-])lerobot_env_robogym(?:\.\w+)+")
FILE = re.compile(r"(?<![\w/.~$-])((?:" + "|".join(re.escape(r) for r in FILE_ROOTS) + r")/[\w./*-]*)")
SHORT_PY = re.compile(r"(?<![\w/.~$-])((?:\w+/)+\w+\.py)\b")
LAUNCH_FILE = re.compile(r"(?<![\w/.-])(\w+\.launch\.py)\b")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
COMMAND_START = re.compile(r"^\s*(?:\w+=\S*\s+)*(?:exec\s+|nice\s+-n\s+\d+\s+|time\s+)*(robogym_\w+)\b")


def doc_pages(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@cache
def console_scripts(root: Path) -> frozenset[str]:
    """The console_scripts of setup.py's entry_points."""
    tree = ast.parse((root / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "console_scripts":
                    return frozenset(e.value.split("=")[0].strip() for e in value.elts)
    raise AssertionError("setup.py has no console_scripts")


@cache
def source_text(root: Path) -> str:
    """Everything the code spells: the package, the plugin, launch files, config, setup.py."""
    parts = [(root / "setup.py").read_text()]
    for folder in (PACKAGE, "plugins", "launch", "config"):
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and path.suffix in {".py", ".yaml", ".xml", ".toml", ".rviz"}:
                parts.append(path.read_text(errors="replace"))
    return "\n".join(parts)


def lines_of(text: str):
    """(line number, line, fence language or None outside a fenced block) for each line; fence
    lines themselves are left out."""
    language = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            language = fence.group(2).lower() if language is None else None
            continue
        yield number, line, language


def _bound_names(tree: ast.Module) -> set[str] | None:
    """Names bound at the top of a module (into if/try/with blocks); None when the module has a
    ``__getattr__``, which can answer any name."""
    names: set[str] = set()

    def visit(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            for field in ("body", "orelse", "finalbody"):
                if isinstance(node, (ast.If, ast.Try, ast.With)) and getattr(node, field, None):
                    visit(getattr(node, field))
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    visit(handler.body)

    visit(tree.body)
    return None if "__getattr__" in names else names


def resolve_module(base: Path, dotted: str) -> tuple[Path | None, list[str], str]:
    """``pkg.a.b.Name.x`` under ``base`` (the folder holding ``pkg``): the file of its longest
    module prefix (a package's ``__init__.py``), the names after it, and that module's dotted
    name. The file is None when even ``pkg`` is no package."""
    parts = dotted.split(".")
    path = base / parts[0]
    if not (path / "__init__.py").is_file():
        return None, parts[1:], parts[0]
    module_file, consumed = path / "__init__.py", 1
    for part in parts[1:]:
        if (path / part / "__init__.py").is_file():
            path = path / part
            module_file = path / "__init__.py"
        elif (path / f"{part}.py").is_file():
            module_file, consumed = path / f"{part}.py", consumed + 1
            break
        else:
            break
        consumed += 1
    return module_file, parts[consumed:], ".".join(parts[:consumed])


def module_problem(base: Path, dotted: str, runnable: bool = False) -> str | None:
    """Why ``dotted`` names nothing under ``base``, or None when it does."""
    module_file, rest, module = resolve_module(base, dotted)
    if module_file is None:
        return f"{dotted}: {dotted.split('.')[0]} is no package"
    if rest:
        if runnable:
            return f"python -m {dotted}: no module {module}.{rest[0]}"
        names = _bound_names(ast.parse(module_file.read_text()))
        if names is not None and rest[0] not in names:
            return f"{dotted}: no module {module}.{rest[0]}, and {module} binds no name {rest[0]!r}"
        return None
    if runnable:
        if module_file.name == "__init__.py":
            if not (module_file.parent / "__main__.py").is_file():
                return f"python -m {dotted}: the package has no __main__.py"
        elif "__name__ == \"__main__\"" not in module_file.read_text() and \
                "__name__ == '__main__'" not in module_file.read_text():
            return f"python -m {dotted}: the module has no main guard"
    return None


def _exists(root: Path, relative: str) -> bool:
    if "*" in relative:
        return any(root.glob(relative.rstrip("/")))
    return (root / relative).exists()


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings: the text as shown (no backticks, no link
    targets), lower case, punctuation but ``-`` and ``_`` dropped, spaces to hyphens, a repeated
    one numbered."""
    seen: dict[str, int] = {}
    anchors = set()
    for _number, line, language in lines_of(text):
        heading = HEADING.match(line) if language is None else None
        if not heading:
            continue
        title = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.group(2))
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def page_problems(root: Path, page: Path) -> list[str]:
    """Everything ``page`` names that does not exist under ``root``, one line each."""
    text = page.read_text()
    scripts = console_scripts(root)
    out = []

    def report(number, message):
        out.append(f"{page.relative_to(root)}:{number}: {message}")

    for number, line, language in lines_of(text):
        # console scripts where they are run, then every other robogym_* name
        run = set(RUN.findall(line)) | set(BIN.findall(line)) | set(INLINE_COMMAND.findall(line))
        if language in SHELL and language is not None:
            for segment in re.split(r"&&|\|\||;|\||\$\(|&(?=\s|$)", line.split(" #")[0]):
                start = COMMAND_START.match(segment)
                if start and start.group(1) != PACKAGE:
                    run.add(start.group(1))
        for name in sorted(run - scripts):
            report(number, f"{name} is run as a command but is no console script of setup.py "
                           f"({', '.join(sorted(scripts))})")
        for name in sorted(set(NAME.findall(line)) - run - scripts - {PACKAGE} - set(OTHER_NAMES)):
            if not re.search(r"(?<![\w])" + re.escape(name), source_text(root)):
                report(number, f"{name} is no console script, and the code never names it")
        # modules
        runnable = {m.rstrip(".") for m in PYTHON_M.findall(line)}
        for dotted in sorted(runnable):
            if dotted.startswith(f"{PACKAGE}.") or dotted == PACKAGE:
                problem = module_problem(root, dotted, runnable=True)
                if problem:
                    report(number, problem)
        for dotted in sorted({m.rstrip(".") for m in MODULE.findall(line)} - runnable):
            problem = module_problem(root, dotted)
            if problem:
                report(number, problem)
        for dotted in sorted({m.rstrip(".") for m in PLUGIN_MODULE.findall(line)}):
            problem = module_problem(root / "plugins" / "lerobot_env_robogym", dotted)
            if problem:
                report(number, problem)
        if language is not None:
            imported = FROM_IMPORT.match(line)
            if imported:
                for name in filter(None, (n.strip() for n in imported.group(2).split(","))):
                    problem = module_problem(root, f"{imported.group(1)}.{name}")
                    if problem:
                        report(number, problem)
        # files
        for relative in sorted({f.rstrip(".") for f in FILE.findall(line)}):
            first, _, rest = relative.partition("/")
            if first == PACKAGE and "/" not in rest and "." not in rest:
                continue  # a gym id or a dataset id (robogym_ros/Handover-v0), not a path
            if not _exists(root, relative):
                report(number, f"{relative} does not exist")
        for relative in sorted(set(SHORT_PY.findall(line))):
            if relative.split("/")[0] in FILE_ROOTS:
                continue
            if not any(_exists(root / base, relative) for base in SHORT_PATH_BASES):
                report(number, f"{relative} is no file of {' or '.join(SHORT_PATH_BASES)}")
        for launch_file in sorted(set(LAUNCH_FILE.findall(line))):
            if not (root / "launch" / launch_file).is_file():
                report(number, f"{launch_file} is no file of launch/")
        # relative links (outside code)
        if language is None:
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue  # https:, mailto:
                path_part, _, anchor = target.partition("#")
                linked = (page.parent / path_part).resolve() if path_part else page
                if not linked.exists():
                    report(number, f"link {target}: {path_part} does not exist")
                elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked.read_text()):
                    report(number, f"link {target}: {linked.relative_to(root.resolve()) if path_part else page.name} "
                                   f"has no heading #{anchor}")
    return out


def layout_problems(text: str, rules: dict[str, tuple[set[str], set[str]]]) -> list[str]:
    """Where the table of tiers under LAYOUT_HEADING (tier, what, tiers it may import, libraries;
    "ROS" for the ROS libraries, "-" and "stdlib only" for none) differs from ``rules``."""
    rows: dict[str, tuple[set[str], set[str]]] = {}
    section = False
    for line in text.splitlines():
        if line.startswith("#"):
            section = line.strip() == LAYOUT_HEADING
            continue
        row = re.match(r"\| `([\w.]+)` \|.*\| ([^|]*) \| ([^|]*) \|$", line) if section else None
        if row:
            tiers = {t.strip() for t in row.group(2).split(",")} - {"-"}
            libraries = {name.strip() for name in row.group(3).split(",")} - {"stdlib only"}
            if "ROS" in libraries:
                libraries = (libraries - {"ROS"}) | ROS
            rows[row.group(1)] = (tiers, libraries)
    out = []
    for tier in sorted(set(rules) | set(rows)):
        if tier not in rows:
            out.append(f"tier {tier}: no row in the table")
        elif tier not in rules:
            out.append(f"tier {tier}: in the table, but test_tiers.py has no such tier")
        else:
            for what, written, ruled in zip(("tiers", "libraries"), rows[tier], rules[tier]):
                if written != ruled:
                    out.append(f"tier {tier}: the table's {what} {sorted(written)}; RULES: {sorted(ruled)}")
    return out


def readme_problems(root: Path) -> list[str]:
    """The README as the front door: short, linking every docs page, with CI's test command."""
    readme = root / "README.md"
    text = readme.read_text()
    out = []
    count = len(text.splitlines())
    if count > README_MAX_LINES:
        out.append(f"README.md has {count} lines; at most {README_MAX_LINES} (move the detail to docs/)")
    linked = set()
    for _number, line, language in lines_of(text):
        if language is None:
            linked |= {(root / t.partition("#")[0]).resolve() for t in LINK.findall(line) if ":" not in t}
    for page in doc_pages(root)[1:]:
        if page.resolve() not in linked:
            out.append(f"README.md links no {page.relative_to(root)}")
    if not re.search(r"(?m)^\./dev test\b(?!-)", text):
        out.append("README.md no longer shows the test command `./dev test` (CI runs it as the README's)")
    return out


@pytest.mark.parametrize("page", doc_pages(ROOT), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_names_only_what_exists(page):
    problems = page_problems(ROOT, page)
    assert not problems, "the page names what does not exist:\n  " + "\n  ".join(problems)


def test_the_readme_is_the_front_door():
    problems = readme_problems(ROOT)
    assert not problems, "\n  ".join(problems)


def test_the_layout_page_lists_the_tiers_as_test_tiers_rules_them():
    problems = layout_problems((ROOT / "docs" / "layout.md").read_text(), RULES)
    assert not problems, "docs/layout.md and test/house/test_tiers.py's RULES differ:\n  " + "\n  ".join(problems)


def test_the_layout_check_sees_a_table_gone_stale():
    """Positive control: a tier that may import one more tier, a library gone, a tier missing
    and one that does not exist are each reported."""
    text = (ROOT / "docs" / "layout.md").read_text()
    assert layout_problems(text, RULES) == []
    rules = dict(RULES)
    rules["wire"] = ({"contract", "task"}, RULES["wire"][1])
    rules["live"] = (RULES["live"][0], RULES["live"][1] | {"PIL"})
    rules["future"] = (set(), set())
    del rules["export"]
    assert layout_problems(text, rules) == [
        "tier export: in the table, but test_tiers.py has no such tier",
        "tier future: no row in the table",
        "tier live: the table's libraries ['cv2', 'numpy']; RULES: ['PIL', 'cv2', 'numpy']",
        "tier wire: the table's tiers ['contract']; RULES: ['contract', 'task']",
    ]


def _tree(root: Path, readme: str, page: str) -> None:
    root.mkdir()
    (root / "setup.py").write_text('setup(entry_points={"console_scripts": ["robogym_sim = robogym_ros.sim:main"]})\n')
    (root / "robogym_ros" / "sim").mkdir(parents=True)
    (root / "robogym_ros" / "__init__.py").write_text("")
    (root / "robogym_ros" / "sim" / "__init__.py").write_text("")
    (root / "robogym_ros" / "sim" / "loop.py").write_text(
        'STEPS = 1\n\ndef run():\n    pass\n\nif __name__ == "__main__":\n    run()\n')
    (root / "launch").mkdir()
    (root / "launch" / "sim.launch.py").write_text("")
    (root / "docs").mkdir()
    (root / "docs" / "sim.md").write_text(page)
    (root / "docs" / "other.md").write_text("# Other\n")
    (root / "README.md").write_text(readme)


CLEAN_PAGE = """# The sim

## Run it

```bash
robogym_sim --ros-args -p seed:=1 &
ros2 run robogym_ros robogym_sim
python -m robogym_ros.sim.loop
ros2 launch robogym_ros sim.launch.py
```
```python
from robogym_ros.sim.loop import STEPS, run
```
`robogym_ros.sim.loop.run` in `robogym_ros/sim/loop.py`, short `sim/loop.py`; the gym id
`robogym_ros/Handover-v0`; see [the README](../README.md) and [running](#run-it).
"""
CLEAN_README = "# robogym_ros\n\n```bash\n./dev test\n```\n[sim](docs/sim.md), [other](docs/other.md#other)\n"


def test_the_checks_find_what_is_missing(tmp_path):
    """Positive control: a tree whose docs name a missing script, module, name, file, launch file,
    link and heading, a README too long and linking one page of two: each is reported; the same
    tree with clean docs reports nothing."""
    clean = tmp_path / "clean"
    _tree(clean, CLEAN_README, CLEAN_PAGE)
    assert page_problems(clean, clean / "docs" / "sim.md") == []
    assert page_problems(clean, clean / "README.md") == []
    assert readme_problems(clean) == []

    faulty = tmp_path / "faulty"
    page = CLEAN_PAGE + """
```bash
robogym_simm --ros-args &
ros2 run robogym_ros robogym_recorder
python -m robogym_ros.sim
```
```python
from robogym_ros.sim.loop import run, walk
```
`robogym_ros.sim.physics`, `robogym_ros.sim.loop.STOP`, `robogym_viewr`, `test/test_gone.py`,
`bench/bench_*.py`, `sim/gone.py`, `multi.launch.py`, [gone](gone.md), [a heading](#no-such-heading),
[other](other.md#nowhere).
"""
    _tree(faulty, "# robogym_ros\n\n```bash\n./dev test-long\n```\n[sim](docs/sim.md)\n" + "line\n" * 300, page)
    found = "\n".join(page_problems(faulty, faulty / "docs" / "sim.md"))
    for expected in ("robogym_simm is run as a command", "robogym_recorder is run as a command",
                     "python -m robogym_ros.sim: the package has no __main__.py",
                     "robogym_ros.sim.loop.walk: no module", "robogym_ros.sim.physics: no module",
                     "robogym_ros.sim.loop.STOP: no module", "robogym_viewr is no console script",
                     "test/test_gone.py does not exist", "bench/bench_*.py does not exist",
                     "sim/gone.py is no file", "multi.launch.py is no file of launch/",
                     "link gone.md: gone.md does not exist", "has no heading #no-such-heading",
                     "docs/other.md has no heading #nowhere"):
        assert expected in found, f"not reported: {expected}\n{found}"
    assert "robogym_ros/Handover-v0" not in found and "sim/loop.py" not in found
    found = "\n".join(readme_problems(faulty))
    for expected in ("README.md has 306 lines", "README.md links no docs/other.md", "`./dev test`"):
        assert expected in found, f"not reported: {expected}\n{found}"
