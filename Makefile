# `make demo` and `make test` set everything up on first use: a .venv with ember
# installed (editable) and the example plugin, from the project's own files.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml examples/ember-plugin-example/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]' -e examples/ember-plugin-example
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ember devices
	$(VENV)/bin/ember tour

test: $(STAMP)
	$(PY) -m pytest tests

lint: $(STAMP)
	$(VENV)/bin/ruff check ember tests benchmarks examples

bench: $(STAMP)
	$(PY) benchmarks/bench_ops.py

clean:
	rm -rf $(VENV) build *.egg-info
