"""The Renderer: turns a World into the GL meshes of the visible layers and draws a frame.

What gets drawn comes from ``ecs_nav.render.draw`` (and its ``draw_*`` siblings) as numpy arrays;
this module only uploads them: one vertex buffer and one draw call per layer, every agent body
in a single draw call (``render_gl.AgentMesh``). The map, graph and flow-field layers are drawn
into a cached background image that each frame copies until the camera or their data changes.
The side panel, labels and help box are drawn last, in window pixels (``render_text``).

It reads the World and never changes it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from ecs_nav.systems import render_gl
from ecs_nav.systems.render_gl import (
    AgentMesh,
    Mesh,
    RenderUnavailable,
    Target,
    agent_program,
    coloured_program,
    no_fonts_message,
)
from ecs_nav.systems.render_text import TextPainter

from ecs_nav.core.components import Path, PathRequest, Player
from ecs_nav.core.resource_names import AVOIDANCE_TRACE, SEARCH_TRACE
from ecs_nav.core.world import World
from ecs_nav.nav.fields import FIELDS
from ecs_nav.platformer.world import PLATFORMER
from ecs_nav.render import areas as draw_areas
from ecs_nav.render import avoidance as draw_avoidance
from ecs_nav.render import draw
from ecs_nav.render import floors as draw_floors
from ecs_nav.render import graph_layers as draw_graph
from ecs_nav.render import label_layout as draw_label_layout
from ecs_nav.render import labels as draw_labels
from ecs_nav.render import links as draw_links
from ecs_nav.render import panel as draw_panel
from ecs_nav.render import paths as draw_paths
from ecs_nav.render import platformer as draw_platformer
from ecs_nav.render import scale_bar as draw_scale_bar
from ecs_nav.render import side_labels as draw_side_labels
from ecs_nav.render.colours import agent_groups

gl: Any = None  # pyglet.gl, bound by the first Renderer (render_gl.load_pyglet)
pyglet: Any = None

def shared_field_view(world: World, graph, selected_rows) -> dict | None:
    """The heat map / arrows input for the shared flow field to show (see ``prepare``)."""
    rows = np.asarray(selected_rows, dtype=np.int64).reshape(-1)
    rows = rows[(rows >= 0) & (rows < world.table.n)]
    ids = world.table.field_id[rows]
    shared = world.resources[FIELDS].shown(ids[ids >= 0])
    if shared is None or shared.flow is None or not shared.flow.is_current(graph):
        return None
    return {"distance": shared.flow.distance, "direction": shared.node_directions(graph),
            "version": (shared.id, shared.built_tick)}



STATIC_LAYERS = ("map", "heat_map", "graph_edges", "graph_nodes", "flow_field")
"""Layers that change only when the map, the graph or the flow field does: cached as an image."""


def _same(a: Any, b: Any) -> bool:
    """Cache keys: objects (the map, the graph, arrays) by identity, version numbers by value."""
    return a is b or (isinstance(a, (int, float, str)) and isinstance(b, (int, float, str)) and a == b)


class Renderer:
    """Draws a World into the framebuffer bound in the current GL context.

    Static layers (the map, the nav graph) are rebuilt only when the map object or the graph's
    version changes; the flow field when its arrays change; agents, paths, velocities and
    steering targets every frame. GL objects belong to the context current at construction.
    """

    def __init__(self) -> None:
        global gl, pyglet
        pyglet = render_gl.load_pyglet()
        gl = render_gl.gl
        self.context = gl.current_context
        self.coloured = coloured_program()
        self.agent_programs = {True: agent_program(quads=False), False: agent_program(quads=True)}
        self.meshes = {
            "map": Mesh(gl.GL_TRIANGLES),
            "heat_map": Mesh(gl.GL_TRIANGLES),
            "graph_edges": Mesh(gl.GL_LINES),
            "graph_nodes": Mesh(gl.GL_LINES),
            "flow_field": Mesh(gl.GL_LINES),
            "search": Mesh(gl.GL_TRIANGLES),
            "path_bands": Mesh(gl.GL_TRIANGLES),  # drawn with "paths", under the lines
            "paths": Mesh(gl.GL_LINES),
            "steer_targets": Mesh(gl.GL_LINES),
            "velocity": Mesh(gl.GL_LINES),
            "avoidance": Mesh(gl.GL_LINES),
            "side_characters": Mesh(gl.GL_TRIANGLES),  # a side view's boxes and held keys
            "side_inputs": Mesh(gl.GL_LINES),
        }
        self.overlay = Mesh(gl.GL_TRIANGLES)
        self.agents = AgentMesh()
        self.text = TextPainter(pyglet, lambda exc: RenderUnavailable(no_fonts_message(exc)))
        self.groups: Any = None  # the last frame's draw_colours.AgentGroups
        self._background: Target | None = None
        self._background_key: list | None = None

    # --- building the layers -----------------------------------------------------------------

    def _static(self, name: str, key: tuple, build: Callable[[], np.ndarray]) -> None:
        mesh = self.meshes[name]
        if mesh.key is None or not all(_same(a, b) for a, b in zip(mesh.key, key, strict=True)):
            mesh.upload(build())
            mesh.key = key

    def prepare(self, world: World, layers: Iterable[str], selected_rows: Any = (),
                pixels_per_unit: float | None = None) -> None:
        """Upload what the visible ``layers`` need from ``world`` (CPU side of a frame). The heat
        map and arrows show ``world.resources["flow_field"]`` when set, else the shared flow
        field of the first selected agent that follows one, else the field with most users.
        ``pixels_per_unit`` (the camera's scale) hides velocity lines of agents drawn small. On a
        map of several floors the nodes and agents off the first selected agent's floor are
        shaded (``ecs_nav.render.floors``)."""
        layers = set(layers)
        graph, flow = world.nav_graph, world.resources.get("flow_field")
        table = world.table
        if flow is None and world.resources.get(FIELDS) is not None and graph is not None:
            flow = shared_field_view(world, graph, selected_rows)
        side = world.resources.get(PLATFORMER)
        if side is not None:  # a side view: its level, bots' paths, boxes and keys
            self._prepare_side_view(world, side, layers, selected_rows)
            return
        areas = getattr(world, "nav_areas", None)  # tinted on the floor (ecs_nav.render.areas)
        per_node = {"graph_edges", "graph_nodes", "heat_map", "flow_field"} | ({"map"} if areas is not None else set())
        shade, agent_shade = draw_floors.view_shades(world, selected_rows, nodes=bool(layers & per_node),
                                                     agents="agents" in layers)
        graph_key = (graph, getattr(graph, "version", 0), draw_floors.shade_key(shade))
        if "map" in layers:
            self._static("map", (world.map, getattr(world.map, "version", 0), areas,
                                 graph_key if areas is not None else None),
                         lambda: draw.map_triangles(world.map, draw_areas.area_cells(
                             areas, graph, None if world.map is None else world.map.bounds, shade)))
        if "graph_edges" in layers:
            self._static("graph_edges", graph_key, lambda: draw_graph.graph_edge_lines(graph, shade))
        if "graph_nodes" in layers:
            self._static("graph_nodes", graph_key, lambda: draw_graph.graph_node_ticks(graph, shade))
        flow_key = graph_key + ((flow.get("distance"), flow.get("direction"), flow.get("version"))
                                if isinstance(flow, dict) else (None, None, None))
        if "heat_map" in layers:
            self._static("heat_map", flow_key, lambda: draw_graph.heat_map_triangles(graph, flow, shade))
        if "flow_field" in layers:
            self._static("flow_field", flow_key, lambda: draw_graph.flow_field_arrows(graph, flow, shade))
        if "search" in layers:
            self.meshes["search"].upload(draw_paths.searched_nodes(graph, world.resources.get(SEARCH_TRACE)))
        players = table.rows_of(np.asarray(world.find(Player), dtype=np.int64))
        groups = self.groups = agent_groups(world, draw.PALETTE, players)
        if "paths" in layers:
            paths = [(e, c[0]) for e, c in world.query(Path)]
            colours = draw_paths.path_colours(paths, table, groups.row_colour)
            requests = [(e, c[0]) for e, c in world.query(PathRequest)]
            self.meshes["path_bands"].upload(draw_paths.path_bands(paths, colours))
            self.meshes["paths"].upload(np.concatenate([
                draw_paths.path_lines(paths, table, colours),
                draw_paths.goal_markers(paths, requests, table, groups.row_colour),
                draw_links.link_arcs(world.nav_links, graph)]))
        if "steer_targets" in layers:
            self.meshes["steer_targets"].upload(draw_paths.steer_target_lines(table, groups.row_colour))
        if "velocity" in layers:
            self.meshes["velocity"].upload(draw.velocity_lines(table, pixels_per_unit=pixels_per_unit))
        if "avoidance" in layers:
            self.meshes["avoidance"].upload(draw_avoidance.half_plane_lines(world.resources.get(AVOIDANCE_TRACE)))
        if "agents" in layers:
            self.agents.upload(draw.agent_instances(table, players, selected_rows, groups.row_colour, agent_shade))

    def _prepare_side_view(self, world: World, side, layers: set, selected_rows: Any) -> None:
        """The side view's layers: "map" is the level, "paths" the bots' paths with their jumps
        and goal rings, "agents" the characters' boxes and the keys they hold, each in its
        group's colour (``selected_rows`` are rows of the side view's characters)."""
        for name in ("graph_edges", "graph_nodes", "heat_map", "flow_field"):
            self._static(name, ("side view",), draw_platformer.empty_rows)
        groups = self.groups = draw_side_labels.character_groups(world, side)
        for name in ("steer_targets", "velocity", "path_bands", "search"):
            self.meshes[name].upload(draw_platformer.empty_rows())
        if "map" in layers:
            self._static("map", (side.level, side.version), lambda: draw_platformer.level_triangles(side.level))
        if "paths" in layers:
            self.meshes["paths"].upload(np.concatenate([draw_platformer.path_lines(side, groups.row_colour),
                                                        draw_platformer.goal_rings(side, groups.row_colour)]))
        self.agents.upload(np.zeros((0, 9), np.float32))
        if "agents" in layers:
            self.meshes["side_characters"].upload(
                draw_platformer.character_triangles(side, selected_rows, groups.row_colour))
            self.meshes["side_inputs"].upload(draw_platformer.input_lines(side))
        else:
            self.meshes["side_characters"].upload(draw_platformer.empty_rows())
            self.meshes["side_inputs"].upload(draw_platformer.empty_rows())

    # --- drawing -------------------------------------------------------------------------------

    def draw(self, world: World, camera: draw.Camera, layers: Iterable[str] = draw.LAYERS,
             selected_rows: Any = (), overlay: list[str] | None = None, help_text: str | None = None,
             forces: Mapping[str, Any] | None = None) -> None:
        """Draw ``layers`` of ``world`` through ``camera`` into the bound framebuffer (which must
        be ``camera.width`` x ``camera.height``); with the "hud" layer, ``overlay`` lines (the
        HUD) head the side panel at the left edge, followed by the events, the legend and the
        first selected agent's state (``forces``: its behaviours' forces, behaviour name ->
        (fx, fy), when the caller has them; see ``draw_panel.agent_state_lines``);
        ``help_text`` goes in a box at the centre.

        The static layers (map, heat map, graph, flow field) are drawn into a cached background
        image, redrawn only when the camera or what they show changes; each frame copies it
        and draws the moving layers on top."""
        layers = set(layers)
        self.prepare(world, layers, selected_rows, camera.scale)
        gl.glEnable(gl.GL_BLEND)
        gl.glBlendFunc(gl.GL_SRC_ALPHA, gl.GL_ONE_MINUS_SRC_ALPHA)
        matrix = tuple(float(v) for v in camera.matrix())
        static = [name for name in STATIC_LAYERS if name in layers]
        if static:
            self._blit_background(camera, static, matrix)
        else:
            gl.glClearColor(*draw.PALETTE["background"])
            gl.glClear(gl.GL_COLOR_BUFFER_BIT)
        program = self.coloured
        program.use()
        program["u_matrix"] = matrix
        for name in draw.LAYERS:
            if name in STATIC_LAYERS or name not in layers:
                continue
            if name == "agents":
                program.stop()
                points = self.agents.use_points(camera.scale)
                agent_program = self.agent_programs[points]
                agent_program.use()
                agent_program["u_matrix"] = matrix
                agent_program["u_pixel"] = 1.0 / camera.scale
                agent_program["u_min_pixels"] = draw.MIN_AGENT_PIXELS
                agent_program["u_selection"] = tuple(draw.PALETTE["selection"][:3])
                self.agents.draw(points)
                agent_program.stop()
                program.use()
                self.meshes["side_characters"].draw()
                self.meshes["side_inputs"].draw()
            elif name in self.meshes:
                if name == "paths":
                    self.meshes["path_bands"].draw()
                self.meshes[name].draw()
        gl.glBindVertexArray(0)
        program.stop()
        left = draw_panel.side_panel_width(camera.width) if "hud" in layers else 0
        side = world.resources.get(PLATFORMER)
        bar = draw_scale_bar.scale_bar(camera) if "hud" in layers and side is None else None
        labels, rows = [], []
        if "labels" in layers and self.groups is not None:
            labels = (draw_labels.agent_labels(world, camera, self.groups, left, avoid=[bar.box] if bar else ())
                      if side is None else draw_side_labels.side_labels(world, side, camera, self.groups, left))
            # leader lines, then a dark backing that keeps light text readable on a light wall
            rows.append(draw_label_layout.leader_triangles(labels, draw_labels.label_width,
                                                           draw_labels.LABEL_HEIGHT_PIXELS))
            rows += [draw.rectangles(*np.reshape(draw_labels.label_box(label), (2, 2)), draw.PALETTE["label_backing"])
                     for label in labels]
        if bar is not None:
            rows.append(draw_scale_bar.scale_bar_triangles(bar))
            labels = [*labels, draw_scale_bar.scale_bar_label(bar)]
        if rows:
            self._overlay(np.concatenate(rows), camera)
        if labels:
            self.text.draw_labels(labels, draw_labels.LABEL_FONT_SIZE)
        if "hud" in layers and overlay is not None:
            entities = world.table.live("entity") if side is None else side.entity[:side.count]
            rows = np.asarray(selected_rows, dtype=np.int64).reshape(-1)
            selected = entities[rows[(rows >= 0) & (rows < len(entities))]]
            lines = draw_panel.panel_lines(world, overlay, layers, self.groups, selected, forces)
            self._side_panel(lines, camera, left)
        if help_text:
            self._text_panel("help", help_text, camera)

    def _blit_background(self, camera: draw.Camera, static: list[str], matrix: tuple) -> None:
        """Copy the cached image of the static layers into the bound framebuffer, redrawing it
        first when the camera, the layer set or any static layer's data changed."""
        key = [camera.center[0], camera.center[1], camera.scale, camera.width, camera.height, *static]
        for name in static:
            key.extend(self.meshes[name].key)
        target = self._background
        fresh = (target is not None and (target.width, target.height) == (camera.width, camera.height)
                 and self._background_key is not None and len(key) == len(self._background_key)
                 and all(_same(a, b) for a, b in zip(key, self._background_key)))
        drawn_into = gl.GLint()
        gl.glGetIntegerv(gl.GL_DRAW_FRAMEBUFFER_BINDING, ctypes.byref(drawn_into))
        if not fresh:
            if target is None or (target.width, target.height) != (camera.width, camera.height):
                if target is not None:
                    target.delete()
                target = self._background = Target(camera.width, camera.height)
            target.bind()
            gl.glClearColor(*draw.PALETTE["background"])
            gl.glClear(gl.GL_COLOR_BUFFER_BIT)
            self.coloured.use()
            self.coloured["u_matrix"] = matrix
            for name in static:
                self.meshes[name].draw()
            gl.glBindVertexArray(0)
            self.coloured.stop()
            self._background_key = key
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, target.fbo)
        gl.glBindFramebuffer(gl.GL_DRAW_FRAMEBUFFER, drawn_into.value)
        gl.glViewport(0, 0, camera.width, camera.height)
        gl.glBlitFramebuffer(0, 0, camera.width, camera.height, 0, 0, camera.width, camera.height,
                             gl.GL_COLOR_BUFFER_BIT, gl.GL_NEAREST)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, drawn_into.value)

    def _overlay(self, rows: np.ndarray, camera: draw.Camera) -> None:
        """Draw triangle rows given in window pixels."""
        self.overlay.upload(rows)
        self.coloured.use()
        self.coloured["u_matrix"] = tuple(float(v) for v in draw.Camera.pixels(camera.width, camera.height).matrix())
        self.overlay.draw()
        gl.glBindVertexArray(0)
        self.coloured.stop()

    def _side_panel(self, lines: list, camera: draw.Camera, width: int) -> None:
        """The side panel: a full-height strip ``width`` pixels wide at the left edge, the
        ``draw_panel.PanelLine``s from its top, a colour swatch before each line that has one."""
        pad, swatch = 8, 12
        text = "\n".join(" " * 2 + line.text if line.swatch is not None else line.text for line in lines)
        shown = self.text.blocks.get("panel")  # (its metrics: pixels a line per point, as laid out last)
        per_point = (self.text.line_height(shown) / shown.font_size if shown is not None and shown.text
                     else draw_panel.PANEL_LINE_PIXELS_PER_POINT)
        size = draw_panel.panel_font_size(len(lines), camera.height - 2 * pad, per_point)
        label = self.text.block("panel", text, size)
        top = camera.height - pad
        label.x, label.y = pad, top
        line_height = self.text.line_height(label)
        swatch = min(swatch, line_height - 1)  # (a smaller font: smaller swatches)
        rows = [draw.rectangles([0, 0], [width, camera.height], draw.PALETTE["hud_panel"])]
        for i, line in enumerate(lines):
            if line.swatch is not None:
                y = top - (i + 0.5) * line_height
                rows.append(draw.rectangles([pad, y - swatch / 2 + 1], [pad + swatch, y + swatch / 2 - 1],
                                            line.swatch[:3] + (1.0,)))
        self._overlay(np.concatenate(rows), camera)
        label.draw()

    def _text_panel(self, key: str, text: str, camera: draw.Camera) -> None:
        """A block of monospaced text on a translucent box at the centre, in window pixels."""
        label = self.text.block(key, text, 11)
        w, h = label.content_width, label.content_height
        pad = 8
        x, y = (camera.width - w) // 2, (camera.height - h) // 2
        label.x, label.y = x, y + h
        self._overlay(draw.rectangles([x - pad, y - pad], [x + w + pad, y + h + pad], draw.PALETTE["hud_panel"]),
                      camera)
        label.draw()
