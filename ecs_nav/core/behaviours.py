"""The steering behaviours' names and their order: a light module (no numba), so that components
and the World know the behaviours without loading the kernels (``import ecs_nav`` stays fast).
``ecs_nav.motion.steering``, ``steering_obstacles`` and ``steering_group`` compute them."""

BEHAVIOURS = (
    "wall_avoidance",
    "obstacle_avoidance",
    "evade",
    "flee",
    "separation",
    "alignment",
    "cohesion",
    "seek",
    "arrive",
    "wander",
    "pursuit",
    "follow_path",
    "follow_flow",
)
"""Behaviour names in Buckland's priority order (SteeringBehavior::CalculatePrioritized;
offset pursuit, interpose and hide are not implemented; follow_flow, seed 003, comes last).
Forces stacked for the combiners are (k, len(BEHAVIOURS), 2) in this order."""

B = {name: i for i, name in enumerate(BEHAVIOURS)}
"""Column index of each behaviour in stacked forces and weights."""
