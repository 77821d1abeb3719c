# The two quick-start commands: `make demo` and `make test`. Each creates .venv when it is
# missing and installs into it what it needs, each set of packages once (a stamp each, in .venv:
# `make test` after `make demo` adds only what the demo did not install):
#   make demo   the package and its dependencies (the media extra too without a display), and the
#               chase scene's kernels compiled ahead of time
#   make test   the extras the tests use, and every built-in scene's kernels compiled ahead of time
# The package is installed editable without compiling anything (ECS_NAV_AOT=keep, see setup.py);
# the kernels are compiled as a step of their own, which says what it does as it goes.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
OUT    ?= out
BASE         := $(VENV)/.installed-base
MEDIA        := $(VENV)/.installed-media
DEV          := $(VENV)/.installed-dev
TESTS        := $(VENV)/.installed-tests
DOCS_STAMP   := $(VENV)/.installed-docs
BENCH_STAMP  := $(VENV)/.installed-bench
KERNELS_DEMO := $(VENV)/.kernels-demo
KERNELS      := $(VENV)/.kernels-all
# What the kernels compiled ahead of time are built from: after an edit, the build compiles again
# only the parts of the library whose sources changed.
KERNEL_SOURCES := $(shell find ecs_nav -name '*.py' -not -path '*/__pycache__/*') ecs_nav/compile/kernel_manifest.json
# (setuptools warns of every editable install that a folder named like the package in the
# current folder could shadow it: here that folder is the package)
INSTALL := ECS_NAV_AOT=keep PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q \
	--no-build-isolation -e

.PHONY: demo test bench lint docs clean screenshots

# A venv made without python3-venv (ensurepip) has a python but no pip: make it again. Installing
# without build isolation (no second numba in a build environment) needs a setuptools that reads
# pyproject.toml's license.
$(BASE): pyproject.toml setup.py
	@$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	@echo "make: installing ecs-nav and its dependencies (numpy, numba, scipy, pyglet, esper) into $(VENV)"
	@$(PY) -m pip install -q "setuptools>=77"
	@$(INSTALL) .
	@touch $@

$(MEDIA): $(BASE)
	@echo "make: installing the media extra (imageio, imageio-ffmpeg: videos and screenshots)"
	@$(INSTALL) ".[media]"
	@touch $@

$(DEV): $(BASE)
	@echo "make: installing the dev extra (pytest, pytest-xdist, hypothesis, ruff)"
	@$(INSTALL) ".[dev]"
	@touch $@

# Every extra the tests use (all but bench and docs). Ray has no wheel for every platform and
# Python: without it its sweep test is skipped.
$(TESTS): $(BASE)
	@echo "make: installing the extras the tests use (dev, media, results, results-check, dask, rl, ray)"
	@$(PY) -m pip install -q --upgrade pip
	@$(INSTALL) ".[dev,media,results,results-check,dask,rl]"
	@$(INSTALL) ".[ray]" || echo "make: ray did not install here; the ray sweep test is skipped"
	@touch $@

# The kernels compiled ahead of time (ecs_nav/aot_kernels_*.so, see ecs_nav/compile/aot_build.py),
# in parallel processes, a line of progress per kernel: the chase scene's for the demo (about
# half the work), every built-in scene's for the tests. Where they do not build (no C compiler)
# the kernels compile on first use instead, and the next make tries again.
$(KERNELS_DEMO): $(BASE) $(KERNEL_SOURCES)
	@if $(PY) -m ecs_nav.compile.aot_build ecs_nav --scenes chase; then touch $@; else \
		echo "make: the kernels were not compiled ahead of time (above: why); they compile on first use"; fi

$(KERNELS): $(BASE) $(KERNEL_SOURCES)
	@if $(PY) -m ecs_nav.compile.aot_build ecs_nav; then touch $@ $(KERNELS_DEMO); else \
		echo "make: the kernels were not compiled ahead of time (above: why); they compile on first use"; fi

# With a display: the interactive viewer on the chase scene. Without one: the same scene
# recorded off-screen (pyglet's headless EGL mode) to $(OUT)/chase.mp4 (encoded as it goes;
# a GIF of 900 frames would be held in memory whole).
demo: $(BASE) $(if $(DISPLAY)$(WAYLAND_DISPLAY),,$(MEDIA)) $(KERNELS_DEMO)
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
test: $(TESTS) $(KERNELS)
	@$(PY) -m pytest -q -n auto --durations=10; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests - failing"; exit 1; fi; \
	exit $$rc

# Every built-in scene rendered off-screen at its default settings (the layers its [view] table
# turns on) after SHOT_TICKS ticks to a small PNG under docs/screenshots/ (the README and the
# gallery show them). The platformer is taken after SHOT_TICKS_PLATFORMER: its bots catch the player (who
# stands still without a driver) within 5 s, and a picture of them all in one place shows no
# path or jump. The doorway is taken after SHOT_TICKS_DOORWAY, once its crowd has come through
# the doorway and spread round its goal. SHOT_SIZE is the frame size in pixels.
SCENES := $(basename $(notdir $(wildcard scenes/*.toml)))
SHOT_SIZE ?= 800 450
SHOT_TICKS ?= 600
SHOT_TICKS_PLATFORMER ?= 120
SHOT_TICKS_DOORWAY ?= 4800
screenshots: $(MEDIA) $(KERNELS)
	@mkdir -p docs/screenshots
	@for scene in $(SCENES); do \
		ticks=$(SHOT_TICKS); [ $$scene = platformer ] && ticks=$(SHOT_TICKS_PLATFORMER); \
		[ $$scene = doorway ] && ticks=$(SHOT_TICKS_DOORWAY); \
		$(VENV)/bin/ecs-nav run $$scene --headless --ticks $$ticks --size $(SHOT_SIZE) \
			--screenshot docs/screenshots/$$scene.png >/dev/null || exit 1; \
		echo "docs/screenshots/$$scene.png"; \
	done
	@# 256 colours without dithering: a third of the bytes (10,000 agents: ~160 KB); with 64 the
	@# quantizer merged the small legend swatches into their neighbours' colours
	@$(PY) -c "import glob; from PIL import Image; [Image.open(p).convert('RGB').quantize(colors=256, \
		dither=Image.Dither.NONE).save(p, optimize=True) for p in glob.glob('docs/screenshots/*.png')]"

$(BENCH_STAMP): $(BASE)
	@echo "make: installing the bench extra (the peers the benchmarks compare with)"
	@$(INSTALL) ".[bench]"
	@touch $@

bench: $(TESTS) $(BENCH_STAMP) $(KERNELS)
	$(PY) bench/core.py
	$(PY) bench/spawn.py
	$(PY) bench/graph_build.py
	$(PY) bench/floors_build.py
	$(PY) bench/pathfinding.py
	$(PY) bench/jump.py
	$(PY) bench/flowfield.py
	$(PY) bench/steering_flow.py
	$(PY) bench/motion.py
	$(PY) bench/evacuation.py --jupedsim-max-seconds 60
	$(PY) bench/small_worlds.py
	$(PY) bench/small_worlds.py --layers
	$(PY) bench/cold_start.py
	$(PY) bench/render.py
	$(PY) bench/search_trace.py
	$(PY) bench/record.py --ticks 900 --inline
	$(PY) bench/record.py --scene patrol --ticks 1800 --every 1 --inline --repeats 9

lint: $(DEV)
	$(VENV)/bin/ruff check ecs_nav systems tests bench setup.py

# The documentation site (mkdocs.yml, docs/) built into site/. --strict makes every warning fail
# the build: a broken link or anchor, a page missing from the nav, an API reference that names
# nothing. The build needs no network. The docs extra is installed once per change of
# pyproject.toml or setup.py (a stamp of its own).
$(DOCS_STAMP): $(BASE)
	@echo "make: installing the docs extra (mkdocs, mkdocs-material, mkdocstrings-python)"
	@$(INSTALL) ".[docs]"
	@touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache build *.egg-info site
