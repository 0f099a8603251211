"""The sim node ``robogym_sim`` and its parts: the node (node.py), its tick publisher, cameras,
description, diagnostics, run control, lockstep step requests, trajectory subscriber, spec and
parameters; the standard simulation API and the arm controllers in sub-packages.

``python -m robogym_ros.nodes.sim_node`` runs the node (as the console script ``robogym_sim``).
"""
