"""The handover task, below every tier that simulates, plans or learns it (mujoco + numpy): the
scene (the MJCF in models/, the layout, the seeded reset), placement (whether the block lies in
the tray, judged from the physics) and goals (success, stages and reward of a goal, batched, as
the env, the batched env, the expert and the agents' tools all count them)."""
