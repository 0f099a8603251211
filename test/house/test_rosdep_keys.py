"""Every dependency key of package.xml resolves with rosdep for ROS 2 Jazzy and Kilted on Ubuntu
24.04 (noble, the platform of both): a ROS package released into that distro, or a rosdep key
with a rule for Ubuntu noble. ``rosdep install --from-paths src --ignore-src`` stops at the first
key it cannot locate, so one made-up key (``python3-mcap-pip``) breaks a user's first command.

The test cannot reach the network: it reads ``test/rosdep_keys.yaml``, the part of the rosdistro
database that concerns our keys (their rules in ``rosdep/*.yaml``, and which of them each
distro's ``distribution.yaml`` releases). To refresh it from a rosdistro checkout:
``python test/house/test_rosdep_keys.py <rosdistro checkout> > test/house/rosdep_keys.yaml``.
"""
from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXCERPT = Path(__file__).with_name("rosdep_keys.yaml")
DISTROS = ("jazzy", "kilted")
PLATFORM = ("ubuntu", "noble")  # both distros' Tier 1 platform
DEPEND_TAGS = ("depend", "build_depend", "build_export_depend", "buildtool_depend", "exec_depend",
               "test_depend", "doc_depend")


def package_keys(package_xml: Path = ROOT / "package.xml") -> list[str]:
    root = ET.parse(package_xml).getroot()
    return [e.text.strip() for tag in DEPEND_TAGS for e in root.iter(tag)]


def resolves_on(rule, os_name: str, codename: str) -> bool:
    """A rosdep rule (a key's entry) has something to install on that OS version."""
    if not isinstance(rule, dict) or os_name not in rule:
        return False
    entry = rule[os_name]
    if isinstance(entry, dict) and not ({"pip", "apt", "packages", "source"} & set(entry)):
        entry = entry.get(codename, entry.get("*"))  # by codename, '*' for the rest
    if entry is None:
        return False
    return bool(entry) if isinstance(entry, (list, dict)) else False


def unresolved(keys, excerpt: dict) -> dict[str, list[str]]:
    """Per distro, the keys rosdep could not locate there."""
    out = {}
    for distro in DISTROS:
        released = set(excerpt["ros_packages"][distro])
        out[distro] = [k for k in keys if k not in released
                       and not resolves_on(excerpt["rules"].get(k), *PLATFORM)]
    return out


def test_every_package_xml_key_resolves_for_jazzy_and_kilted_on_ubuntu():
    excerpt = yaml.safe_load(EXCERPT.read_text())
    keys = package_keys()
    assert keys and len(keys) == len(set(keys)), keys
    missing = set(keys) - set(excerpt["rules"]) - {k for d in DISTROS for k in excerpt["ros_packages"][d]}
    assert not missing, (f"{sorted(missing)}: neither a rosdep key nor a ROS package of {DISTROS} in {EXCERPT.name} "
                         "(a key new to rosdistro: refresh it, see this module's docstring)")
    assert unresolved(keys, excerpt) == {d: [] for d in DISTROS}


def test_the_check_tells_a_made_up_key_and_a_key_without_an_ubuntu_rule():
    """Positive controls: main's package.xml had python3-mcap-pip, which no rosdep file defines."""
    excerpt = yaml.safe_load(EXCERPT.read_text())
    assert excerpt["absent"] and all(k not in excerpt["rules"] for k in excerpt["absent"])
    assert unresolved(["python3-mcap-pip", "rclpy"], excerpt) == {d: ["python3-mcap-pip"] for d in DISTROS}
    assert not resolves_on({"fedora": ["x"]}, *PLATFORM)
    assert not resolves_on({"ubuntu": {"jammy": ["x"], "noble": None}}, *PLATFORM)
    assert resolves_on({"ubuntu": {"pip": {"packages": ["x"]}}}, *PLATFORM)
    assert resolves_on({"ubuntu": {"*": ["x"], "focal": None}}, *PLATFORM)


def excerpt_of(rosdistro: Path, keys: list[str]) -> str:
    """The part of a rosdistro checkout that concerns ``keys`` (what this test reads)."""
    def show(path: str) -> str:
        return subprocess.run(["git", "-C", str(rosdistro), "show", f"HEAD:{path}"], check=True,
                              capture_output=True, text=True).stdout
    commit = subprocess.run(["git", "-C", str(rosdistro), "log", "-1", "--format=%H %cs"], check=True,
                            capture_output=True, text=True).stdout.split()
    rules = {}
    for name in ("base.yaml", "python.yaml"):
        table = yaml.safe_load(show(f"rosdep/{name}"))
        rules.update({k: {"file": f"rosdep/{name}", **v} for k, v in table.items() if k in keys})
    released = {}
    for distro in DISTROS:
        repos = yaml.safe_load(show(f"{distro}/distribution.yaml"))["repositories"]
        names = {p for r, v in repos.items() if "release" in v for p in v["release"].get("packages", [r])}
        released[distro] = sorted(k for k in keys if k in names)
    doc = {"source": f"github.com/ros/rosdistro at {commit[0]} ({commit[1]})",
           "ros_packages": released,
           "rules": {k: {os: rule for os, rule in v.items() if os in ("file", PLATFORM[0])} for k, v in rules.items()},
           # keys a package.xml might be tempted by, which no rosdep file defines
           "absent": sorted({"python3-mcap-pip", "python3-mcap-ros2-support-pip", "python3-mcap"} - set(rules))}
    header = "# Generated by `python test/house/test_rosdep_keys.py <rosdistro checkout>`: the rosdep rules\n" \
             "# (Ubuntu's) and ROS releases of package.xml's keys. Read by test/house/test_rosdep_keys.py\n" \
             "# (no network in tests).\n"
    return header + yaml.safe_dump(doc, sort_keys=False, width=110)


if __name__ == "__main__":
    sys.stdout.write(excerpt_of(Path(sys.argv[1]), sorted(set(package_keys()) | {"mcap-ros2-support"})))
