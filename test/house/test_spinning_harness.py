"""The harness's spin thread (test/harness/spinning.py): an entity made ``paused()`` is never seen
half-built, and a spin thread that raised is named at the next wait instead of every later wait
timing out. The half-built entity here does what rclpy's ActionClient does (ros2/rclpy#1589): it
joins its node's waitables, and only later has what the executor asks it for."""
from __future__ import annotations

import threading
import time

import pytest
from rclpy.waitable import NumberOfEntities, Waitable
from spinning import STEP_S, Spinning


class HalfBuilt(Waitable):
    def __init__(self, node):
        super().__init__(node.default_callback_group)
        node.add_waitable(self)  # the executor may count it from here on
        time.sleep(4 * STEP_S)  # ... while the rest of it is still being made
        self._lock = threading.Lock()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def get_num_entities(self):
        with self._lock:
            return NumberOfEntities()

    def add_to_wait_set(self, wait_set):
        pass

    def is_ready(self, wait_set):
        return False

    def take_data(self):
        return None

    async def execute(self, taken_data):
        return None


def spinning_node(ros, name: str) -> tuple[Spinning, list]:
    import rclpy
    node = rclpy.create_node(name)
    ticks: list = []
    node.create_timer(0.01, lambda: ticks.append(time.monotonic()))
    return Spinning(node), ticks


def test_an_entity_made_paused_is_not_spun_before_it_is_whole(ros):
    spinning, ticks = spinning_node(ros, "spin_paused")
    try:
        with spinning.paused():
            n = len(ticks)
            HalfBuilt(spinning.nodes[0])
            assert len(ticks) == n, "the node was spun inside paused()"
        time.sleep(0.3)
        spinning.check()
        assert len(ticks) > n, "the node was not spun after paused()"
    finally:
        spinning.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # that thread's end, expected
def test_a_spin_thread_that_raised_is_named_at_the_next_check(ros):
    spinning, _ = spinning_node(ros, "spin_unpaused")
    try:
        HalfBuilt(spinning.nodes[0])  # made while spun: the executor counts it half-built
        time.sleep(0.3)
        with pytest.raises(RuntimeError, match="the spin thread ended by AttributeError"):
            spinning.check()
    finally:
        spinning.close()
