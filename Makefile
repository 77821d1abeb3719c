# The two quick-start commands: `make demo` and `make test`. Each creates .venv when it is
# missing and installs the project into it first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
OUT    ?= out

.PHONY: demo test bench lint clean screenshots

# A venv made without python3-venv (ensurepip) has a python but no pip: make it again.
$(STAMP): pyproject.toml
	@$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,media,results,results-check,dask]"
	@# Ray has no wheel for every platform and Python: without it its sweep test is skipped
	@$(PY) -m pip install -q -e ".[ray]" || echo "make: ray did not install here; the ray sweep test is skipped"
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

# Every built-in scene rendered off-screen at its default settings (600 ticks, the layers its
# [view] table turns on) to a small PNG under docs/screenshots/ (the README shows them).
# SHOT_SIZE is the frame size in pixels.
SCENES := $(basename $(notdir $(wildcard scenes/*.toml)))
SHOT_SIZE ?= 800 450
screenshots: $(STAMP)
	@mkdir -p docs/screenshots
	@for scene in $(SCENES); do \
		$(VENV)/bin/ecs-nav run $$scene --headless --size $(SHOT_SIZE) --screenshot docs/screenshots/$$scene.png \
			>/dev/null || exit 1; \
		echo "docs/screenshots/$$scene.png"; \
	done
	@# 64 colours without dithering: the same picture in a tenth of the bytes (10,000 agents: ~120 KB)
	@$(PY) -c "import glob; from PIL import Image; [Image.open(p).convert('RGB').quantize(colors=64, \
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
	$(PY) bench/cold_start.py
	$(PY) bench/render.py

lint: $(STAMP)
	$(VENV)/bin/ruff check ecs_nav systems tests bench

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache build *.egg-info
