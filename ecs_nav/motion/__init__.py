"""Agents' motion as compiled kernels over the agent table: steering behaviours, physics (integration,
collisions, relaxation), waypoint following, group arrival and the neighbour grid."""
