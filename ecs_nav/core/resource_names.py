"""Keys of ``world.resources`` that the World itself reads (a light module: no kernels)."""

PLATFORMER = "platformer"
"""The key of the ``ecs_nav.platformer.world.PlatformerMap`` in ``world.resources``."""

SEARCH_TRACE = "search_trace"
"""The key of the ``ecs_nav.nav.search_trace.SearchTrace`` in ``world.resources``: whose path
searches the PathfindSystem records (the viewer's "search" layer). Absent: nothing is recorded."""

AVOIDANCE_TRACE = "avoidance_trace"
"""The key of the ``ecs_nav.motion.avoidance_trace.AvoidanceTrace`` in ``world.resources``:
whose ORCA choice the SteeringSystem's avoidance stage records (the viewer's "avoidance" layer).
Absent: nothing is recorded."""

LINK_LANDINGS = "link_landings"
"""The key of a dict ``entity -> (x, y, elevation)`` in ``world.resources``: where each agent
crossing an off-mesh link will land (the PathFollowSystem's ``systems/link_crossing.py`` keeps
it). The PathfindSystem plans such an agent's path from there, not from the air."""
