"""ROS parameters declared from robogym_ros.params: ranges in the descriptors, integers accepted
for doubles, live changes handed to the node, the others refused while the sim runs.

A parameter that needs a restart is refused by our own callback rather than by a read_only
descriptor: rclpy checks read_only before the range, and `ros2 param set ... decimation 0`
must say what the range is, not only that the value cannot change.

A batch is all or nothing. SetParametersAtomically hands the whole batch to one validate call:
every parameter of it is checked first, with no side effect, and the node applies the changes
only after rclpy has accepted and stored all of them (the post-set callback). SetParameters
(``ros2 param set``, ``ros2 param load``) is per parameter by ROS's definition: rclpy runs each
one as a batch of its own, and each answer says whether that one took effect.
"""
from __future__ import annotations

import difflib
from typing import Any, Callable, Iterable

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterNotDeclaredException
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


def _type_checked(node: Node, table: dict[str, Param]) -> None:
    """Our message, with the range and unit, for a value of the wrong type.

    rclpy compares the type with the descriptor's before any callback sees the value, and
    answers "Wrong parameter type, expected '3' got '4'" (enum numbers). It offers no hook for
    that message, so its descriptor check is wrapped on this node: a wrong type gets
    Param.coerce's message; everything else (the range included) is rclpy's own check.
    """
    rclpy_check = getattr(node, "_apply_descriptor", None)
    if rclpy_check is None:  # pragma: no cover - an rclpy without it keeps its own message
        return

    def check(parameter: Parameter, *args, **kwargs) -> SetParametersResult:
        p = table.get(parameter.name)
        if p is not None and parameter.type_ != Parameter.Type.NOT_SET:
            try:
                p.as_type(parameter.value)
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        return rclpy_check(parameter, *args, **kwargs)

    node._apply_descriptor = check  # noqa: SLF001 - see the docstring


def undeclared(node: Node, names: Iterable[str], known: Iterable[str]) -> str:
    """What a set of undeclared parameters is told, naming each (and the closest parameter)."""
    known = list(known)
    said = []
    for name in names:
        close = difflib.get_close_matches(name, known, n=1)
        said.append(repr(name) + (f" (did you mean {close[0]!r}?)" if close else ""))
    return (f"{', '.join(said)}: {node.get_name()} has no such parameter; nothing was set "
            "(`ros2 param list` lists them)")


def _refuse_undeclared(node: Node, parameters: list[Parameter], known: Iterable[str]) -> None:
    """rclpy names no parameter in its refusal of undeclared ones ("Invalid access to undeclared
    parameter(s): []": its list is built from a generator already consumed by ``any``). Raised here,
    from the pre-set callback, with the same exception, so its parameter services answer with
    these names, for SetParameters and for an atomic batch alike; nothing is set either way."""
    unknown = [x.name for x in parameters if not node.has_parameter(x.name)]
    if unknown:
        raise ParameterNotDeclaredException(undeclared(node, unknown, known))


def _warn_unknown_overrides(node: Node, names: Iterable[str]) -> None:
    """Warn of a params file's (or -p's) parameters that nothing declared: rclpy ignores them
    without a word, so a typo (``real_time_facter: 2.0``) would silently change nothing.

    A warning, not an error: ROS params files are often shared (``/**:`` sections for several
    nodes), and every ROS node ignores what it does not declare. Checked once the node is built
    (its first spin), so parameters the node declares after this module's are not flagged.
    """
    overrides = node._parameter_overrides  # noqa: SLF001 - no public way to see them
    known = list(names)

    def check() -> None:
        timer.cancel()  # once
        for name in sorted(overrides):
            if node.has_parameter(name) or name.startswith("qos_overrides."):
                continue
            close = difflib.get_close_matches(name, known, n=1)
            node.get_logger().warning(
                f"unknown parameter {name!r} (params file or -p) ignored: {node.get_name()} has no such "
                f"parameter{f'; did you mean {close[0]!r}?' if close else ''} (`ros2 param list` lists them)")

    timer = node.create_timer(0.0, check)


def declare(node: Node, params: Iterable[Param], on_change: Callable[[str, Any], None] | None = None, *,
            check: Callable[[str, Any], None] | None = None,
            admit: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Declare ``params`` on ``node``; returns their start-up values.

    A value out of range or of the wrong type raises ValueError naming the parameter and its
    range, before anything is declared. A change while the sim runs: ``check(name, value)``
    (coerced value) may raise ValueError to refuse it and must change nothing; once every
    parameter of the batch passed, ``admit({name: value})`` may refuse the batch too (ValueError,
    nothing changed), or apply, within that one call, what the batch changes under the run state's
    owner; once rclpy stored them, ``on_change(name, value)`` applies each.
    """
    table = {p.name: p for p in params}
    # rclpy keeps the command line's -p and the params file here, and reads them when a
    # parameter is declared: the one place to coerce and range-check them first.
    overrides = node._parameter_overrides  # noqa: SLF001 - no public way to see them
    for name, p in table.items():
        if name in overrides:
            overrides[name] = _as_float(p, overrides[name])
            p.coerce(overrides[name].value)
    _type_checked(node, table)
    values = {}
    for name, p in table.items():
        default = list(p.default) if isinstance(p.default, tuple) else p.default
        value = node.declare_parameter(name, default, descriptor(p)).value
        values[name] = p.coerce(value)

    def coerce_types(parameters: list[Parameter]) -> list[Parameter]:
        _refuse_undeclared(node, parameters, table)
        return [_as_float(table[x.name], x) if x.name in table else x for x in parameters]

    def validate(parameters: list[Parameter]) -> SetParametersResult:
        # The whole batch, before anything changes: one refusal refuses it all.
        for x in parameters:
            p = table.get(x.name)
            if p is None:
                continue
            try:
                value = p.coerce(x.value)  # the range first, whether live or not
                if not p.live:
                    raise ValueError(f"{p.name} is fixed while the sim runs: restart it with "
                                     f"-p {p.name}:={x.value!r} (or the params file)")
                if check is not None:
                    check(x.name, value)
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        if admit is not None:  # last: rclpy stores a batch that passes here
            try:
                admit({x.name: table[x.name].coerce(x.value) for x in parameters if x.name in table})
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def apply(parameters: list[Parameter]) -> None:
        for x in parameters:
            if x.name in table and on_change is not None:
                on_change(x.name, table[x.name].coerce(x.value))

    node.add_pre_set_parameters_callback(coerce_types)
    node.add_on_set_parameters_callback(validate)
    node.add_post_set_parameters_callback(apply)
    _warn_unknown_overrides(node, table)
    return values
