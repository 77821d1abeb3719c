"""Side view (platformer, seed 002): the tile level and its jump-aware planner, character physics, the
bot that turns a plan into key inputs, and their components in a World."""
