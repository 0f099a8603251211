"""The buffer audit: every slot its own memory, none shared with received messages, none changed."""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np
from numpy.lib.array_utils import byte_bounds

from .results import LIST_LIMIT, CheckResult, Finding, capped, digest


def _buffer_of(obj: Any) -> np.ndarray | None:
    """The memory an object exposes, without copying; None for objects with no buffer."""
    if isinstance(obj, np.ndarray):
        return obj
    try:
        memoryview(obj)
    except TypeError:
        return None
    return np.asarray(obj) if not isinstance(obj, (bytes, bytearray, memoryview)) else np.frombuffer(obj, np.uint8)


class _Span(NamedTuple):
    lo: int
    hi: int
    received: bool  # a received message's array, not a slot
    index: int
    array: np.ndarray


def _spans(slots: Sequence[Any], received: Sequence[Any]) -> list[_Span]:
    """Every non-empty buffer among slots and received arrays, sorted by start address."""
    spans = []
    for is_received, objs in ((False, slots), (True, received)):
        for i, obj in enumerate(objs):
            arr = _buffer_of(obj)
            if arr is not None and arr.nbytes > 0:
                spans.append(_Span(*byte_bounds(arr), is_received, i, arr))
    return sorted(spans, key=lambda s: s.lo)


def _overlapping(spans: list[_Span]):
    """Runs of two or more spans whose byte ranges overlap (chained); spans sorted by start."""
    cluster: list[_Span] = []
    cluster_hi = -1
    for span in spans:
        if cluster and span.lo >= cluster_hi:
            if len(cluster) > 1:
                yield cluster
            cluster, cluster_hi = [], -1
        cluster.append(span)
        cluster_hi = max(cluster_hi, span.hi)
    if len(cluster) > 1:
        yield cluster


class _Sharing:
    """Which slots share memory (union-find over slot indices), and example (slot, received) pairs."""

    def __init__(self, n_slots: int):
        self._parent = list(range(n_slots))
        self.received_pairs: set[tuple[int, int]] = set()

    def _root(self, i: int) -> int:
        parent = self._parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def settle(self, cluster: list[_Span]) -> None:
        """Link the members of one run of overlapping spans that really share memory."""
        # Same pointer/shape/strides means same memory; only distinct layouts need shares_memory.
        layouts: dict[tuple, list[_Span]] = {}
        for m in cluster:
            a = m.array
            layouts.setdefault((a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str), []).append(m)
        groups = sorted(layouts.values(), key=lambda g: g[0].lo)
        linked = [(g, g) for g in groups]
        for gi, g in enumerate(groups):
            for h in groups[gi + 1:]:
                if h[0].lo >= g[0].hi:  # sorted by start: nothing further overlaps g
                    break
                if np.shares_memory(g[0].array, h[0].array):
                    linked.append((g, h))
        for g, h in linked:
            g_slots = [m.index for m in g if not m.received]
            h_slots = [m.index for m in h if not m.received] if h is not g else []
            all_slots = g_slots + h_slots
            for s in all_slots[1:]:
                self._parent[self._root(s)] = self._root(all_slots[0])
            # One example pair per slot keeps this linear when thousands of slots alias one array.
            for slots_, other in ((g_slots, h), (h_slots, g)):
                rec = next((m.index for m in other if m.received), None)
                if rec is not None:
                    self.received_pairs.update((s, rec) for s in slots_)

    def groups(self) -> list[list[int]]:
        """Groups of two or more slots that share memory."""
        groups: dict[int, list[int]] = {}
        for i in range(len(self._parent)):
            groups.setdefault(self._root(i), []).append(i)
        return [g for g in groups.values() if len(g) > 1]


def _changed_since_store(slots: Sequence[Any], digests: Sequence[bytes | None]) -> tuple[list[int], int]:
    """(slots whose content no longer matches their store-time digest, slots with a digest)."""
    if len(digests) != len(slots):
        raise ValueError(f"{len(digests)} digests for {len(slots)} slots")
    verified = [(i, obj, d) for i, (obj, d) in enumerate(zip(slots, digests)) if d is not None]
    return [i for i, obj, d in verified if digest(obj) != d], len(verified)


def audit_buffers(slots: Sequence[Any], *, digests: Sequence[bytes | None] | None = None,
                  received: Sequence[Any] = (), name: str = "buffer_audit") -> CheckResult:
    """Every slot its own memory, none shared with received messages, none changed since store.

    Counting objects misses views (``obs[:]`` is a new object over the same memory), so
    memory is compared with ``np.shares_memory``; candidates are found by byte bounds
    first so a long buffer costs O(n log n), not n**2.
    """
    n = len(slots)
    if n == 0:
        return CheckResult(name, "no slots to audit", {"n_slots": 0}, no_data=True)
    by_id: dict[int, list[int]] = {}
    for i, obj in enumerate(slots):
        by_id.setdefault(id(obj), []).append(i)
    same_object = [g for g in by_id.values() if len(g) > 1]

    sharing_graph = _Sharing(n)
    for cluster in _overlapping(_spans(slots, received)):
        sharing_graph.settle(cluster)
    sharing = sharing_graph.groups()
    identical = {frozenset(g) for g in same_object}
    view_groups = [g for g in sharing if frozenset(g) not in identical]
    received_pairs = sorted(sharing_graph.received_pairs)
    slots_sharing_received = sorted({s for s, _ in received_pairs})
    mismatched, n_verified = _changed_since_store(slots, digests) if digests is not None else ([], 0)

    figures = {
        "n_slots": n, "n_objects": len(by_id),
        "n_same_object_slots": sum(len(g) for g in same_object),
        "n_sharing_slots": sum(len(g) for g in sharing),
        "sharing_groups": [capped(g) for g in sharing[:LIST_LIMIT]],
        "n_slots_sharing_received": len(slots_sharing_received),
        "received_pairs": [list(p) for p in received_pairs[:LIST_LIMIT]],
        "n_verified": n_verified, "n_digest_mismatch": len(mismatched), "mismatch_slots": capped(mismatched),
    }
    findings = [Finding("same_object", (
        f"{len(g)} slots are one and the same object (slots {_short(g)}): the buffer stores references, "
        f"not copies"), {"slots": capped(g)}) for g in same_object[:LIST_LIMIT]]
    findings += [Finding("shared_memory", (
        f"{len(g)} slots share memory though they are {len({id(slots[i]) for i in g})} distinct objects "
        f"(slots {_short(g)}): views such as obs[:] or np.asarray(obs) -- copy on store"),
        {"slots": capped(g)}) for g in view_groups[:LIST_LIMIT]]
    if received_pairs:
        findings.append(Finding("shares_received", (
            f"{len(slots_sharing_received)} slots share memory with received message arrays (slots "
            f"{_short(slots_sharing_received)}): the buffer keeps the sender's arrays, not copies"),
            {"n_slots": len(slots_sharing_received), "pairs": [list(p) for p in received_pairs[:LIST_LIMIT]]}))
    if mismatched:
        findings.append(Finding("digest_mismatch", (
            f"{len(mismatched)} of {n_verified} slots changed after store (content no longer matches the "
            f"digest taken at store time): slots {_short(mismatched)}"),
            {"n_mismatch": len(mismatched), "slots": capped(mismatched)}))
    verified = (f"{len(mismatched)} of {n_verified} changed since store" if n_verified
                else "no store-time digests to verify")
    summary = (f"{n} slots in {len(by_id)} objects; {figures['n_sharing_slots']} share memory with another slot, "
               f"{len(slots_sharing_received)} with received arrays; {verified}")
    return CheckResult(name, summary, figures, tuple(findings))


def _short(indices: Sequence[int]) -> str:
    idx = list(indices)
    if len(idx) > 2 and idx == list(range(idx[0], idx[-1] + 1)):
        return f"{idx[0]}..{idx[-1]}"
    return ", ".join(map(str, idx[:8])) + (", ..." if len(idx) > 8 else "")
