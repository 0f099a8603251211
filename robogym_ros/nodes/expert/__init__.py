"""``robogym_expert``: the scripted handover expert (robogym_ros.expert) driving a running sim
through its topics, on sim time (node)."""
