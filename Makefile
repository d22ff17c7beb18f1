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
	$(PY) -m pip install --quiet -e '.[cpu,test,data,onnx,opencl,tensorboard,fx,cuda13,mpi]' -e examples/ember-plugin-example
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ember devices
	$(VENV)/bin/ember demo

# The suite starts hundreds of Python processes (each program twice, MPI ranks, the CLI):
# bytecode compiled once up front spares each of them compiling ember again where
# PYTHONDONTWRITEBYTECODE keeps imports from writing it (import ember 0.95 s -> 0.3 s).
# One pytest worker per core (pytest-xdist), each test file on one worker, so its
# module fixtures are built once: on 2 cores the suite takes ~9 min instead of ~17.
test: $(STAMP)
	$(PY) -m compileall -q ember examples > /dev/null
	$(PY) -m pytest tests -n auto --dist loadfile

lint: $(STAMP)
	$(VENV)/bin/ruff check ember tests benchmarks examples

bench: $(STAMP)
	$(PY) -m pip install --quiet torch==2.13.0 || echo "bench: PyTorch unavailable; no ratios"
	$(PY) benchmarks/bench_ops.py
	$(PY) benchmarks/bench_train.py

clean:
	rm -rf $(VENV) build *.egg-info
