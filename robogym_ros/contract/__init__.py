"""The contract every tier shares, standard library only, so the physics process, the checks, the
recorder, the nodes and the Gymnasium env all read one definition of each fact:
``names`` (topic and node names, stamps, the pose layout, QoS), ``answers`` (RunState, StepResult,
RunAnswer: what the sim answers its clients) and ``spec`` (the spec the sim publishes).
``from robogym_ros.contract import X`` reaches each of them.
"""
from robogym_ros.contract.answers import *  # noqa: F403
from robogym_ros.contract.names import *  # noqa: F403
from robogym_ros.contract.spec import *  # noqa: F403
