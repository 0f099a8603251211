"""One table of every suite CI ran: passed, skipped (with each reason), failed.

    python .ci/table.py NAME=RESULT.xml ...      (pytest --junitxml files; a missing file: not run)
Exit 0 when every suite ran and none failed, else 1.
"""
import collections
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def suite(path: Path) -> tuple[int, collections.Counter, list[str]]:
    passed, skipped, failed = 0, collections.Counter(), []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        skip = case.find("skipped")
        if bad is not None:
            failed.append(name)
        elif skip is not None:
            reason = skip.get("message") or ""
            if reason == "collection skipped":  # a module-level skip: (path, line, "Skipped: reason")
                text = (skip.text or reason).rstrip(")").rstrip("\"'")
                reason = text.split("Skipped: ", 1)[-1]
            reason = " ".join(reason.split())
            skipped[reason[:160]] += 1
        else:
            passed += 1
    return passed, skipped, failed


def main(args: list[str]) -> int:
    ok = True
    rows = []
    for arg in args:
        name, _, file = arg.partition("=")
        path = Path(file)
        if not path.exists() or path.stat().st_size == 0:
            rows.append((name, "-", "-", "NOT RUN", []))
            ok = False
            continue
        passed, skipped, failed = suite(path)
        ok &= not failed and passed > 0
        reasons = [f"{n} x {r}" for r, n in skipped.most_common()]
        rows.append((name, str(passed), str(sum(skipped.values())), str(len(failed)), reasons + failed))
    print("\n| suite | passed | skipped | failed |\n|---|---|---|---|")
    for name, passed, skipped, failed, _ in rows:
        print(f"| {name} | {passed} | {skipped} | {failed} |")
    for name, *_, details in rows:
        for d in details:
            print(f"  {name}: {d}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
