# The two quick-start commands: `make demo` and `make test`. Each creates .venv when it is
# missing and installs the project into it first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
OUT    ?= out

.PHONY: demo test bench lint docs clean screenshots

# A venv made without python3-venv (ensurepip) has a python but no pip: make it again.
$(STAMP): pyproject.toml setup.py
	@$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,media,results,results-check,dask]"
	@# Ray has no wheel for every platform and Python: without it its sweep test is skipped. It is
	@# installed by name (pyproject's `ray` extra) so that the package, and its kernels compiled
	@# ahead of time (a minute and a half), are not built a second time
	@$(PY) -m pip install -q ray || echo "make: ray did not install here; the ray sweep test is skipped"
	@touch $(STAMP)

# With a display: the interactive viewer on the chase scene. Without one: the same scene
# recorded off-screen (pyglet's headless EGL mode) to $(OUT)/chase.mp4 (encoded as it goes;
# a GIF of 900 frames would be held in memory whole).
demo: $(STAMP)
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
		$(VENV)/bin/ecs-nav view chase; \
	else \
		mkdir -p $(OUT); \
		echo "No display found: recording the chase scene off-screen instead."; \
		$(VENV)/bin/ecs-nav run chase --headless --ticks 1800 --record $(OUT)/chase.mp4 \
			--screenshot $(OUT)/chase.png; \
	fi

# On every core (pytest-xdist). pytest exits 5 when it collected nothing: that is a broken setup,
# not a pass.
test: $(STAMP)
	@$(PY) -m pytest -q -n auto --durations=10; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests - failing"; exit 1; fi; \
	exit $$rc

# Every built-in scene rendered off-screen at its default settings (the layers its [view] table
# turns on) after SHOT_TICKS ticks to a small PNG under docs/screenshots/ (the README and the
# gallery show them). The platformer is taken after SHOT_TICKS_PLATFORMER: its bots catch the player (who
# stands still without a driver) within 5 s, and a picture of them all in one place shows no
# path or jump. SHOT_SIZE is the frame size in pixels.
SCENES := $(basename $(notdir $(wildcard scenes/*.toml)))
SHOT_SIZE ?= 800 450
SHOT_TICKS ?= 600
SHOT_TICKS_PLATFORMER ?= 120
screenshots: $(STAMP)
	@mkdir -p docs/screenshots
	@for scene in $(SCENES); do \
		ticks=$(SHOT_TICKS); [ $$scene = platformer ] && ticks=$(SHOT_TICKS_PLATFORMER); \
		$(VENV)/bin/ecs-nav run $$scene --headless --ticks $$ticks --size $(SHOT_SIZE) \
			--screenshot docs/screenshots/$$scene.png >/dev/null || exit 1; \
		echo "docs/screenshots/$$scene.png"; \
	done
	@# 256 colours without dithering: a third of the bytes (10,000 agents: ~160 KB); with 64 the
	@# quantizer merged the small legend swatches into their neighbours' colours
	@$(PY) -c "import glob; from PIL import Image; [Image.open(p).convert('RGB').quantize(colors=256, \
		dither=Image.Dither.NONE).save(p, optimize=True) for p in glob.glob('docs/screenshots/*.png')]"

bench: $(STAMP)
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) bench/core.py
	$(PY) bench/spawn.py
	$(PY) bench/graph_build.py
	$(PY) bench/pathfinding.py
	$(PY) bench/flowfield.py
	$(PY) bench/motion.py
	$(PY) bench/evacuation.py --jupedsim-max-seconds 60
	$(PY) bench/small_worlds.py
	$(PY) bench/small_worlds.py --layers
	$(PY) bench/cold_start.py
	$(PY) bench/render.py
	$(PY) bench/search_trace.py

lint: $(STAMP)
	$(VENV)/bin/ruff check ecs_nav systems tests bench setup.py

# The documentation site (mkdocs.yml, docs/) built into site/. --strict makes every warning fail
# the build: a broken link or anchor, a page missing from the nav, an API reference that names
# nothing. The build needs no network. The docs extra is installed once per change of
# pyproject.toml or setup.py (a stamp of its own, after $(STAMP)'s).
DOCS_STAMP := $(VENV)/.docs-installed-stamp
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install -q -e ".[docs]"
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache build *.egg-info site
