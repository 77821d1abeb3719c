"""A small scene for the results tests: a crowd sent to one goal across an open room with a
pillar (all arrive within about 300 ticks), a prefab to sweep over, and a named walker."""

ROOM = """
# results tests: eight walkers cross a small room to one goal
[world]
seed = 3
systems = ["graph_build", "pathfind", "path_follow", "steering", "physics"]

[map]
bounds = [-12, -12, 12, 12]
[[map.circle]]
center = [0, 0]
radius = 1.5
height = 2.0

[navmap]
scan_range = [12, 10, 12]
spacing = 1.0
clearance = 0.6

[prefab.walker]
Agent = { max_speed = 3.0, max_force = 20.0 }
Collider = { radius = 0.35 }
Velocity = {}
SteeringWeights = { weights = { follow_path = 1.0, separation = 1.0 }, neighbour_radius = 1.2 }
PathRequest = { goal = [4, 4] }

[[entity]]
name = "crowd"
prefab = "walker"
count = 8
spawn_area = [-5, -5, -2, -2]

[[entity]]
name = "scout"
prefab = "walker"
Position = { x = -4, y = 4 }
"""


def write_room(folder):
    path = folder / "room.toml"
    path.write_text(ROOM)
    return path
