"""The sim's parameters, each defined once: name, default, unit, range, description, and
whether it can change while the sim runs.

The sim node declares its ROS parameters from this table (ranges in the descriptors,
read-only where a change needs a restart), the physics loop takes its defaults from it,
``config/sim.yaml`` is generated from it (``python -m robogym_ros.params > config/sim.yaml``;
a test keeps the two equal) and the launch files pass on only what the user gave.

Standard library only.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Callable

DEFAULT_CAMERAS = ("left_wrist", "right_wrist", "overhead")


@dataclass(frozen=True)
class Param:
    """One parameter of the sim, defined once: every other place is derived from this."""

    name: str
    default: Any  # its Python type is the parameter's type (float, int, bool, str, tuple of str)
    unit: str  # "" for unitless
    description: str
    minimum: float | None = None  # inclusive
    maximum: float | None = None  # inclusive
    live: bool = False  # takes effect through `ros2 param set`; otherwise read-only
    yaml_comment: str = ""

    @property
    def type(self) -> type:
        return type(self.default)

    @property
    def described(self) -> str:
        """Description with unit and range, as `ros2 param describe` shows it."""
        text = self.description + (f" [{self.unit}]" if self.unit else "")
        if self.minimum is not None or self.maximum is not None:
            text += f"; range {_num(self.minimum)} .. {_num(self.maximum)}"
        return text + ("; live: ros2 param set takes effect" if self.live else "; fixed at start-up")

    def coerce(self, value: Any) -> Any:
        """The value as this parameter's type, or ValueError naming the parameter and its range.

        An integer for a double parameter is accepted (``-p real_time_factor:=0`` arrives as
        an INTEGER); nothing else changes type.
        """
        t = self.type
        value = self.as_type(value)
        if t is float and not math.isfinite(value):
            raise ValueError(f"{self.name} must be finite, got {value!r}")
        if t in (int, float) and not _within(value, self.minimum, self.maximum):
            raise ValueError(f"{self.name} = {value!r} is outside its range "
                             f"{_num(self.minimum)} .. {_num(self.maximum)}"
                             + (f" [{self.unit}]" if self.unit else ""))
        return value

    def as_type(self, value: Any) -> Any:
        """``value`` as this parameter's type (an integer for a double, a list for a string array),
        or ValueError naming the parameter, its type, range and unit; the range is not checked."""
        t = self.type
        if t is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if t is tuple and isinstance(value, list):
            value = tuple(value)
        if not isinstance(value, t) or (t is int and isinstance(value, bool)) \
                or (t is tuple and not all(isinstance(v, str) for v in value)):
            kind = "not all strings" if isinstance(value, tuple) else _type_name(type(value))
            raise ValueError(f"{self.name} must be {self.expects}, got {value!r} ({kind}): {self.description}")
        return value

    @property
    def expects(self) -> str:
        """Its type, range and unit in words: ``a double in 0 .. 100``, ``an integer in 1 .. 1000``."""
        text = _type_name(self.type)
        if self.minimum is not None or self.maximum is not None:
            text += f" in {_num(self.minimum)} .. {_num(self.maximum)}"
        return text + (f" [{self.unit}]" if self.unit else "")

    def parse(self, text: str) -> Any:
        """A value given as text (a launch argument, ``-p name:=text``), coerced and range-checked."""
        text = text.strip()
        t = self.type
        try:
            if t is bool:
                if text.lower() not in ("true", "false"):
                    raise ValueError
                value: Any = text.lower() == "true"
            elif t is int:
                value = int(text)
            elif t is float:
                value = float(text)
            elif t is tuple:
                value = tuple(v.strip().strip("'\"") for v in text.strip("[]").split(",") if v.strip())
            else:
                value = text
        except ValueError:
            raise ValueError(f"{self.name} must be {self.expects}, got {text!r}: {self.description}") from None
        return self.coerce(value)


def _within(value: float, lo: float | None, hi: float | None) -> bool:
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:g}"


def _type_name(t: type) -> str:
    return {float: "a double", int: "an integer", bool: "a bool", str: "a string",
            tuple: "a string array", list: "an array", bytes: "a byte array"}.get(t, t.__name__)


SIM_PARAMS: tuple[Param, ...] = (
    Param("physics_dt_s", 0.002, "s", "physics integration step", 1e-5, 1.0),
    Param("decimation", 5, "", "physics steps per control tick; control_dt_s = physics_dt_s * decimation",
          1, 1000, yaml_comment="-> control_dt_s = 0.01 (100 Hz)"),
    Param("real_time_factor", 1.0, "", "sim seconds per wall second; 0 = as fast as possible",
          0.0, 100.0, live=True),
    Param("seed", 0, "", "seed of the reset randomisation (block/tray side, yaw, upright); a change starts "
          "that seed's sequence at the next reset", 0, 2**31 - 1, live=True),
    Param("start_paused", False, "", "start paused; resume or step through the services"),
    Param("allow_second_instance", False, "", "start even when another sim's spec is latched in this "
          "namespace (it refuses to start otherwise: every stream would be published twice)"),
    Param("model", "", "", "MJCF file path; empty = the built-in two-arm SO-101 scene"),
    Param("max_lag_s", 0.5, "s", "when physics falls this far behind wall time, skip ahead", 0.001, 60.0,
          live=True),
    Param("diagnostics_period_s", 1.0, "s", "period of /diagnostics (wall time)", 0.05, 3600.0, live=True),
    Param("cameras", DEFAULT_CAMERAS, "", "cameras to render (MJCF camera names)"),
    Param("camera_period_s", 0.1, "s", "camera frame period in sim time, its own clock; 0 = cameras off",
          0.0, 3600.0, live=True),
    Param("camera_width_px", 320, "px", "image width; the field of view stays 79.5 x 59.6 deg", 16, 4096,
          yaml_comment="320x240 keeps real time on 2 cores with software GL"),
    Param("camera_height_px", 240, "px", "image height", 12, 3072),
    Param("camera_fisheye", True, "", "U20CAM equidistant fisheye lens; false = plain pinhole"),
    Param("camera_source_scale", 1.0, "", "pinhole render resolution / fisheye centre resolution; "
          "< 1 renders fewer pixels (faster, softer centre)", 0.25, 4.0),
)
SIM = {p.name: p for p in SIM_PARAMS}


def default(name: str) -> Any:
    return SIM[name].default


def sim_yaml() -> str:
    """config/sim.yaml, generated from SIM_PARAMS."""
    lines = [
        "# Parameters of robogym_sim, generated from robogym_ros/params.py:",
        "#   python -m robogym_ros.params > config/sim.yaml",
        "# `ros2 param describe /robogym_sim <name>` gives each one's description, unit and range.",
        "# `/**:` so the file applies under any namespace; launch files pass it to the sim node only.",
        "/**:",
        "  ros__parameters:",
    ]
    for p in SIM_PARAMS:
        value = _yaml_value(p.default)
        note = p.yaml_comment or p.description.split(";")[0]
        unit = f" [{p.unit}]" if p.unit else ""
        live = ", live" if p.live else ""
        entry = f"    {p.name}: {value}"
        lines.append(f"{entry.ljust(38)}  # {note}{unit}{live}")
    return "\n".join(lines) + "\n"


# A launch argument left at this passes nothing on, so the params file's value holds.
FROM_PARAMS_FILE = ""


def given_parameters(argument: Callable[[str], str]) -> dict[str, Any]:
    """The sim parameters named on a launch command line, typed and range-checked.

    ``argument(name)`` is the text of the launch argument ``name`` (in a launch file:
    ``LaunchConfiguration(name).perform(context)``); those left at FROM_PARAMS_FILE are left out.
    """
    given = {}
    for p in SIM_PARAMS:
        text = argument(p.name)
        if text != FROM_PARAMS_FILE:
            value = p.parse(text)
            given[p.name] = list(value) if isinstance(value, tuple) else value
    return given


def _yaml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(value) + "]"
    if isinstance(value, str):
        return '""' if not value else value
    return repr(value)


if __name__ == "__main__":
    sys.stdout.write(sim_yaml())
