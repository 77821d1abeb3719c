"""The previous release's module paths keep working for one release, with a DeprecationWarning."""

import importlib
import subprocess
import sys

import pytest

from ecs_nav.moved import MOVED, MOVED_NAMES


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_old_path_names_a_module_that_exists(old):
    assert importlib.util.find_spec(f"ecs_nav.{MOVED[old]}") is not None


def run(code: str) -> subprocess.CompletedProcess:
    """``code`` in a new interpreter (an old path is imported once per process)."""
    return subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "-c", code], capture_output=True,
                          text=True, check=True)  # fmt: skip


def test_an_old_module_path_gives_the_moved_module_and_says_where_it_went():
    done = run("import ecs_nav.recording as old, ecs_nav.results.recording as new\n"
               "from ecs_nav.steering import normalize\n"
               "print(old is new, old.__name__, old.__spec__.name, normalize.__module__)")
    assert done.stdout.split() == ["True", "ecs_nav.results.recording", "ecs_nav.results.recording",
                                   "ecs_nav.motion.steering"]  # fmt: skip
    assert "<string>:1: DeprecationWarning: ecs_nav.recording moved to ecs_nav.results.recording" in done.stderr
    assert "<string>:2: DeprecationWarning: ecs_nav.steering moved to ecs_nav.motion.steering" in done.stderr


def test_the_names_of_the_old_scene_and_geometry_modules_are_answered_by_their_packages():
    done = run("from ecs_nav.scene import load_scene, builtin_scenes\nfrom ecs_nav.geometry import MapGeometry\n"
               "import ecs_nav.scene.files as f, ecs_nav.geometry.map as g\n"
               "print(load_scene is f.load_scene, MapGeometry is g.MapGeometry)")
    assert done.stdout.split() == ["True", "True"]
    assert "<string>:1: DeprecationWarning: ecs_nav.scene.load_scene moved to ecs_nav.scene.files.load_scene" \
        in done.stderr
    assert "<string>:2: DeprecationWarning: ecs_nav.geometry.MapGeometry moved to ecs_nav.geometry.map" in done.stderr


def test_the_steering_behaviours_that_moved_out_are_answered_by_the_old_module():
    done = run("from ecs_nav.motion.steering import wall_avoidance, flock\n"
               "import ecs_nav.motion.steering_obstacles as o, ecs_nav.motion.steering_group as g\n"
               "print(wall_avoidance is o.wall_avoidance, flock is g.flock)")
    assert done.stdout.split() == ["True", "True"]
    for old, new in (("wall_avoidance", "steering_obstacles"), ("flock", "steering_group")):
        assert (f"<string>:1: DeprecationWarning: ecs_nav.motion.steering.{old} moved to "
                f"ecs_nav.motion.{new}.{old}") in done.stderr
    import ecs_nav.motion.steering as steering

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        steering.nothing_here  # noqa: B018


def test_the_captures_that_moved_out_of_the_viewer_are_answered_by_it():
    done = run("from ecs_nav.render.viewer import render_frame\nimport ecs_nav.render.capture as c\n"
               "print(render_frame is c.render_frame)")
    assert done.stdout.split() == ["True"]
    assert ("<string>:1: DeprecationWarning: ecs_nav.render.viewer.render_frame moved to "
            "ecs_nav.render.capture.render_frame") in done.stderr


@pytest.mark.parametrize("old", sorted(MOVED_NAMES))
def test_every_moved_name_is_held_by_its_new_module_and_no_longer_by_its_old_one(old):
    module = importlib.import_module(f"ecs_nav.{old}")
    for name, new in MOVED_NAMES[old].items():
        assert name not in vars(module), f"ecs_nav.{old} still holds {name}: it would never be answered as moved"
        assert hasattr(importlib.import_module(f"ecs_nav.{new}"), name), f"ecs_nav.{new} has no {name}"


def test_a_name_no_old_module_had_is_still_an_attribute_error():
    import ecs_nav.scene

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        ecs_nav.scene.nothing_here  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ecs_nav.nothing_here")


def test_the_new_paths_import_without_a_warning():
    done = run("import warnings; warnings.simplefilter('error')\n"
               "import ecs_nav, ecs_nav.results.recording, ecs_nav.scene.files, ecs_nav.motion.steering\n"
               "from ecs_nav.scene.files import load_scene\nload_scene('patrol').run(5)")
    assert done.stderr == ""
