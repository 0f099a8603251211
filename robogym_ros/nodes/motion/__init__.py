"""``robogym_motion``: a scripted motion of both arms on sim time (node; the motion itself,
scripted_motion, is pure and known to the tests and the recorder's fault runs)."""
