"""Launch files and the RViz config: loaded for real where `launch_ros` is importable (a ROS
install); everywhere, their names, arguments and topics are checked against what the package
really declares and publishes (AST and YAML: launch is not installed here)."""
import ast
import importlib.util
from pathlib import Path

import mujoco
import pytest
import yaml

from robogym_ros import contract
from robogym_ros.description.urdf import robot_urdf, robot_urdf_of_parameters
from robogym_ros.params import DEFAULT_CAMERAS, SIM
from robogym_ros.task.scene import default_model_path
from robogym_ros.tools.launch_support import file_parameters
from robogym_ros.tools.rviz import RVIZ_CONFIG, config_topics, namespace_remappings

ROOT = Path(__file__).parents[2]
LAUNCH = sorted((ROOT / "launch").glob("*.launch.py"))
RVIZ = ROOT / "config" / RVIZ_CONFIG
# Executables of other packages the launch files start: every ROS install (ros_base) has
# robot_state_publisher; rviz2 comes with the desktop variant and runs only on rviz:=true.
EXTERNAL = {("robot_state_publisher", "robot_state_publisher"), ("rviz2", "rviz2")}


def console_scripts() -> set[str]:
    setup = (ROOT / "setup.py").read_text()
    return {line.split("=")[0].strip().strip('"') for line in setup.splitlines()
            if " = robogym_ros." in line}


def nodes_in(path: Path) -> set[tuple[str, str]]:
    """(package, executable) of every Node(...) call with constant names."""
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Call):
            kw = {k.arg: k.value.value for k in n.keywords if isinstance(k.value, ast.Constant)}
            if "executable" in kw:
                out.add((kw.get("package"), kw["executable"]))
    return out


def declared_arguments(path: Path) -> dict[str, str]:
    """Launch arguments declared with constant names: name -> default (constant) or '?'."""
    out = {}
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "DeclareLaunchArgument" and n.args \
                and isinstance(n.args[0], ast.Constant):
            default = next((k.value for k in n.keywords if k.arg == "default_value"), None)
            out[n.args[0].value] = default.value if isinstance(default, ast.Constant) else "?"
    return out


def test_launch_files_exist():
    assert {p.name for p in LAUNCH} >= {"sim.launch.py", "bringup.launch.py"}


@pytest.mark.parametrize("path", LAUNCH, ids=lambda p: p.name)
def test_launch_files_name_real_executables(path):
    nodes = nodes_in(path)
    ours = {exe for pkg, exe in nodes if pkg == "robogym_ros"}
    assert ours and ours <= console_scripts(), ours - console_scripts()
    assert {n for n in nodes if n[0] != "robogym_ros"} <= EXTERNAL


def test_sim_launch_takes_its_arguments_from_the_one_parameter_table():
    """sim.launch.py declares one argument per robogym_ros.params entry and passes on only
    those given: its source names SIM_PARAMS and no parameter name of its own."""
    text = (ROOT / "launch" / "sim.launch.py").read_text()
    assert "from robogym_ros.params import FROM_PARAMS_FILE, SIM_PARAMS, given_parameters" in text
    literals = {n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)
                and isinstance(n.value, str)}
    assert not literals & set(SIM), literals & set(SIM)


def test_given_parameters_passes_on_only_what_the_command_line_names_typed_and_checked():
    from robogym_ros.params import FROM_PARAMS_FILE, given_parameters
    line = {"decimation": "10", "real_time_factor": "0", "cameras": "['overhead']"}
    given = given_parameters(lambda name: line.get(name, FROM_PARAMS_FILE))
    assert given == {"decimation": 10, "real_time_factor": 0.0, "cameras": ["overhead"]}
    assert type(given["real_time_factor"]) is float  # `:=0` is a double here, as the node declares it
    with pytest.raises(ValueError, match="decimation"):
        given_parameters(lambda name: "0" if name == "decimation" else FROM_PARAMS_FILE)


def test_sim_launch_starts_robot_state_publisher_and_rviz_on_request():
    path = ROOT / "launch" / "sim.launch.py"
    assert ("robot_state_publisher", "robot_state_publisher") in nodes_in(path)
    assert ("rviz2", "rviz2") in nodes_in(path)
    args = declared_arguments(path)
    assert args["rviz"] == "false" and "rviz_config" in args
    text = path.read_text()
    assert '"robot_description": ParameterValue(urdf, value_type=str)' in text
    # the URDF of the model the sim is given: the params file's, unless the command line names one
    assert "robot_urdf_of_parameters({**params_file_values(params_file), **given})" in text
    # bringup includes sim.launch.py: its arguments (rviz:=true) work there too
    assert "sim.launch.py" in (ROOT / "launch" / "bringup.launch.py").read_text()


def test_the_launch_urdf_is_the_one_the_sim_publishes():
    model = mujoco.MjModel.from_xml_path(default_model_path())
    assert robot_urdf_of_parameters({}) == robot_urdf(model)
    two_link = str(ROOT / "test" / "harness" / "models" / "two_link.xml")
    assert robot_urdf_of_parameters({"model": two_link}) == robot_urdf(mujoco.MjModel.from_xml_path(two_link))


def test_bringup_default_bag_is_new_each_run():
    """Running bringup twice in one folder must not fail on an existing bag."""
    text = (ROOT / "launch" / "bringup.launch.py").read_text()
    assert declared_arguments(ROOT / "launch" / "bringup.launch.py")["record"] == ""
    assert 'time.strftime("robogym_bag_%Y%m%d_%H%M%S")' in text


def test_launch_argument_text_is_typed_and_range_checked():
    assert SIM["real_time_factor"].parse("0") == 0.0 and isinstance(SIM["real_time_factor"].parse("0"), float)
    assert SIM["decimation"].parse("10") == 10
    assert SIM["start_paused"].parse("True") is True
    assert SIM["cameras"].parse("[overhead, left_wrist]") == ("overhead", "left_wrist")
    with pytest.raises(ValueError, match=r"decimation = 0 is outside its range 1 \.\. 1000"):
        SIM["decimation"].parse("0")
    with pytest.raises(ValueError, match=r"physics_dt_s must be a double in 1e-05 \.\. 1 \[s\], got 'fast'"):
        SIM["physics_dt_s"].parse("fast")


# --- the RViz config ----------------------------------------------------------------------------
def displays() -> list[dict]:
    return yaml.safe_load(RVIZ.read_text())["Visualization Manager"]["Displays"]


def test_rviz_shows_robot_tf_cameras_and_objects_in_the_world_frame():
    config = yaml.safe_load(RVIZ.read_text())
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == contract.WORLD_FRAME
    by_class: dict[str, list[dict]] = {}
    for d in displays():
        by_class.setdefault(d["Class"], []).append(d)
    models = {d["Description Topic"]["Value"]: d for d in by_class["rviz_default_plugins/RobotModel"]}
    assert set(models) == {"/robot_description", "/objects_description"}
    for d in models.values():  # latched topics: a volatile subscription would miss them
        assert d["Description Source"] == "Topic" and d["Description Topic"]["Durability Policy"] == "Transient Local"
    assert by_class["rviz_default_plugins/TF"][0]["Enabled"]
    images = {d["Topic"]["Value"] for d in by_class["rviz_default_plugins/Image"]}
    assert images == {f"/{contract.image_topic(c)}" for c in DEFAULT_CAMERAS}


def test_every_rviz_topic_is_one_the_sim_publishes():
    from robogym_ros.nodes.sim_node.description import OBJECTS_DESCRIPTION, ROBOT_DESCRIPTION  # noqa: F401 - needs std_msgs
    published = {f"/{t}" for t in (ROBOT_DESCRIPTION, OBJECTS_DESCRIPTION, contract.TRUTH_OBJECTS)}
    published |= {f"/{contract.image_topic(c)}" for c in DEFAULT_CAMERAS}
    assert set(config_topics(RVIZ.read_text())) <= published, set(config_topics(RVIZ.read_text())) - published


def test_rviz_topics_follow_the_namespace():
    text = RVIZ.read_text()
    remaps = dict(namespace_remappings(text, "lab1"))
    assert remaps["/robot_description"] == "/lab1/robot_description"
    assert remaps["/cameras/overhead/image_raw"] == "/lab1/cameras/overhead/image_raw"
    assert remaps["/cameras/overhead/camera_info"] == "/lab1/cameras/overhead/camera_info"  # Camera display's
    assert set(remaps) >= set(config_topics(text)) and "/tf" not in remaps
    assert namespace_remappings(text, "") == [] and namespace_remappings(text, "/") == []


def test_the_rviz_config_is_installed():
    setup = (ROOT / "setup.py").read_text()
    assert 'glob("config/*.rviz")' in setup


@pytest.mark.parametrize("path", LAUNCH, ids=lambda p: p.name)
@pytest.mark.toolchain
def test_launch_description_loads(path):
    pytest.importorskip(
        "launch_ros.actions",
        reason="launch_ros is not installed (no ROS install here; it is on no registry)")
    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    assert description.entities


def test_the_launch_reads_the_model_from_the_params_file(tmp_path):
    """sim.launch.py's params_file_values, compiled on its own (launch is not needed for it)."""
    path = ROOT / "launch" / "sim.launch.py"
    tree = ast.parse(path.read_text())
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "params_file_values")
    namespace = {"yaml": yaml, "Path": Path, "file_parameters": file_parameters}
    exec(compile(ast.Module(body=[func], type_ignores=[]), str(path), "exec"), namespace)
    params_file_values = namespace["params_file_values"]
    assert params_file_values(str(ROOT / "config" / "sim.yaml"))["model"] == ""
    two_link = str(ROOT / "test" / "harness" / "models" / "two_link.xml")
    edited = tmp_path / "sim.yaml"
    edited.write_text(f"robogym_sim:\n  ros__parameters:\n    model: {two_link}\n    decimation: 4\n")
    values = params_file_values(str(edited))
    assert values == {"model": two_link, "decimation": 4}
    assert robot_urdf_of_parameters({**values}) == robot_urdf(mujoco.MjModel.from_xml_path(two_link))
