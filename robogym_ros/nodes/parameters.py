"""ROS parameters declared from robogym_ros.params: ranges in the descriptors, integers accepted
for doubles, live changes handed to the node, the others refused while the sim runs.

A parameter that needs a restart is refused by our own callback rather than by a read_only
descriptor: rclpy checks read_only before the range, and `ros2 param set ... decimation 0`
must say what the range is, not only that the value cannot change.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from robogym_ros.params import Param


def descriptor(p: Param) -> ParameterDescriptor:
    d = ParameterDescriptor(description=p.described)
    if p.minimum is not None and p.maximum is not None:
        if p.type is float:
            d.floating_point_range = [FloatingPointRange(
                from_value=float(p.minimum), to_value=float(p.maximum), step=0.0)]
        elif p.type is int:
            d.integer_range = [IntegerRange(from_value=int(p.minimum), to_value=int(p.maximum), step=1)]
    return d


def _as_float(p: Param, parameter: Parameter) -> Parameter:
    # `-p real_time_factor:=0` and `ros2 param set ... 2` arrive as INTEGER for a double.
    if p.type is float and parameter.type_ == Parameter.Type.INTEGER:
        return Parameter(parameter.name, value=float(parameter.value))
    return parameter


def declare(node: Node, params: Iterable[Param],
            on_change: Callable[[str, Any], None] | None = None) -> dict[str, Any]:
    """Declare ``params`` on ``node``; returns their start-up values.

    A value out of range or of the wrong type raises ValueError naming the parameter and its
    range, before anything is declared. Live parameters set later go through ``on_change``
    (name, coerced value) after rclpy accepted them; it may raise ValueError to refuse.
    """
    table = {p.name: p for p in params}
    # rclpy keeps the command line's -p and the params file here, and reads them when a
    # parameter is declared: the one place to coerce and range-check them first.
    overrides = node._parameter_overrides  # noqa: SLF001 - no public way to see them
    for name, p in table.items():
        if name in overrides:
            overrides[name] = _as_float(p, overrides[name])
            p.coerce(overrides[name].value)
    values = {}
    for name, p in table.items():
        default = list(p.default) if isinstance(p.default, tuple) else p.default
        value = node.declare_parameter(name, default, descriptor(p)).value
        values[name] = p.coerce(value)

    def coerce_types(parameters: list[Parameter]) -> list[Parameter]:
        return [_as_float(table[x.name], x) if x.name in table else x for x in parameters]

    def validate(parameters: list[Parameter]) -> SetParametersResult:
        for x in parameters:
            p = table.get(x.name)
            if p is None:
                continue
            try:
                value = p.coerce(x.value)  # the range first, whether live or not
                if not p.live:
                    raise ValueError(f"{p.name} is fixed while the sim runs: restart it with "
                                     f"-p {p.name}:={x.value!r} (or the params file)")
                if on_change is not None:
                    on_change(x.name, value)
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    node.add_pre_set_parameters_callback(coerce_types)
    node.add_on_set_parameters_callback(validate)
    return values
