"""Where the CPU went during a window: per thread of a process tree, and the busiest
processes of the machine (Linux /proc). Printed by timing-sensitive tests, so that a
failure on a loaded machine says who had the cores."""
from __future__ import annotations

import os
from collections import Counter

TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
POLICIES = {0: "other", 1: "FIFO", 2: "RR", 3: "batch", 5: "idle"}


def _stat(path: str) -> tuple[str, int, int, int, int] | None:
    """(comm, utime+stime ticks, nice, ppid, policy) of /proc/.../stat, or None if it is gone."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return comm, int(fields[11]) + int(fields[12]), int(fields[16]), int(fields[1]), int(fields[38])


def processes() -> dict[int, tuple[str, int, int, int]]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(f"/proc/{name}/stat")
            if stat:
                out[int(name)] = stat
    return out


def tree(root: int, procs: dict) -> list[int]:
    pids, grew = {root}, True
    while grew:
        more = {pid for pid, st in procs.items() if st[3] in pids} - pids
        pids |= more
        grew = bool(more)
    return sorted(pids)


def threads(pids: list[int]) -> dict[tuple[int, int], tuple[str, int, int]]:
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            stat = _stat(f"/proc/{pid}/task/{tid}/stat")
            if stat:
                out[(pid, int(tid))] = (stat[0], stat[1], stat[2], stat[4])
    return out


class CpuWindow:
    """Snapshot at construction, report() at the end: CPU seconds per thread of ``root``'s
    tree (grouped by thread name and nice) and the machine's busiest processes."""

    def __init__(self, root: int):
        self.root = root
        self._procs = processes()
        self._threads = threads(tree(root, self._procs))

    def report(self, top: int = 6) -> str:
        procs = processes()
        thr = threads(tree(self.root, procs))
        by_name: Counter = Counter()
        for key, (comm, ticks, nice, policy) in thr.items():
            before = self._threads.get(key, (comm, 0))[1]
            by_name[f"{key[0]}:{comm}({POLICIES.get(policy, policy)} ni {nice})"] += ticks - before
        busy = Counter({f"{pid}:{st[0]}": st[1] - self._procs.get(pid, st)[1]
                        for pid, st in procs.items() if pid in self._procs})
        fmt = lambda c: ", ".join(f"{k} {v / TICKS_PER_S:.2f}" for k, v in c.most_common(top) if v)  # noqa: E731
        me = os.getpid()
        mine = (f"this process: {POLICIES.get(os.sched_getscheduler(0))} ni {os.getpriority(os.PRIO_PROCESS, 0)}"
                f" cpus {sorted(os.sched_getaffinity(0))}; the sim's cpus {sorted(os.sched_getaffinity(self.root))}")
        return (f"cpu s by thread of the sim: {fmt(by_name)}; busiest processes: {fmt(busy)}; {mine}"
                f" (pid {me})")
