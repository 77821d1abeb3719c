# The two quick-start commands: `make demo` and `make test`. Each creates .venv when it is
# missing and installs the project into it first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
OUT    ?= out

.PHONY: demo test bench lint clean

# A venv made without python3-venv (ensurepip) has a python but no pip: make it again.
$(STAMP): pyproject.toml
	@$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,media]"
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

# pytest exits 5 when it collected nothing: that is a broken setup, not a pass.
test: $(STAMP)
	@$(PY) -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests - failing"; exit 1; fi; \
	exit $$rc

bench: $(STAMP)
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) bench/core.py
	$(PY) bench/graph_build.py
	$(PY) bench/pathfinding.py
	$(PY) bench/flowfield.py
	$(PY) bench/motion.py
	$(PY) bench/small_worlds.py
	$(PY) bench/cold_start.py
	$(PY) bench/render.py

lint: $(STAMP)
	$(VENV)/bin/ruff check ecs_nav systems tests bench

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache build *.egg-info
