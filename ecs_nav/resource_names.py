"""Keys of ``world.resources`` that the World itself reads (a light module: no kernels)."""

PLATFORMER = "platformer"
"""The key of the :class:`ecs_nav.platformer_world.PlatformerMap` in ``world.resources``."""
