"""The sim node ``robogym_sim`` and its parts: the node (node.py), its tick publisher, cameras,
description, diagnostics, trajectory subscriber, the stamp check of commands, spec and
parameters; the run state and its clients (Trigger services, lockstep step requests) in
run_state/, the standard simulation API and the arm controllers in their sub-packages.

``python -m robogym_ros.nodes.sim_node`` runs the node (as the console script ``robogym_sim``).
"""
