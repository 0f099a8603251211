"""The sim's one run state and the ways to change it that the node serves itself: the machine
(machine: the owner, pause/resume/reset/step), the Trigger services (trigger_services), lockstep
step requests and their answers (step_requests, step_results). The standard API's services and
action build on the same machine (../simulation_interfaces)."""
