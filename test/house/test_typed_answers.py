"""No module reads another program's answer back out of prose: the sim's Trigger answers are
contract.RunAnswer JSON, so a regular expression over "tick", "seed", "scene" or "stepped" in
robogym_ros/ is a parser of an answer that has a typed decoder."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]
RE_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "split"}
ANSWER_WORDS = ("tick", "seed", "scene", "stepped", "paused")


def answer_regexes(source: str) -> list[tuple[int, str]]:
    """(line, pattern) of every ``re.<call>("...")`` whose pattern names a word of the sim's answers."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                and node.func.attr in RE_CALLS and node.args):
            continue
        pattern = node.args[0]
        if isinstance(pattern, ast.Constant) and isinstance(pattern.value, str) \
                and any(word in pattern.value.lower() for word in ANSWER_WORDS):
            found.append((node.lineno, pattern.value))
    return found


def test_the_scan_finds_a_regex_over_an_answer():
    # The two parsers this replaced, and one that must not count (a namespace check).
    assert answer_regexes('import re\n_R = re.compile(r"tick (\\d+); seed (-?\\d+), scene (\\d+)")\n')
    assert answer_regexes('import re\nm = re.match(r"^reset, paused; tick (\\d+);", message)\n')
    assert not answer_regexes('import re\n_NS = re.compile(r"(/[A-Za-z_][A-Za-z0-9_]*)+")\n')


def test_no_module_parses_an_answer_with_a_regex():
    offenders = [f"{path.relative_to(ROOT)}:{line}: {pattern!r}"
                 for path in sorted((ROOT / "robogym_ros").rglob("*.py"))
                 for line, pattern in answer_regexes(path.read_text())]
    assert not offenders, ("decode the sim's answers with contract.RunAnswer.from_json, not a regex: "
                           + "; ".join(offenders))
