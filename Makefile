# gitrag developer targets.  `make demo` and `make test` are the README's two set-up commands.
VENV := .venv/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
DEMO_STORE ?= .gitrag-store
DEMO_EMBEDDER ?= sentence-transformers/all-MiniLM-L6-v2
DEMO_QUERY ?= diplomová práca o vyhľadávaní v slovenských textoch

.PHONY: install demo test test-all lint bench

install:
	bash scripts/install.sh

demo: install
	$(VENV)/gitrag build --repo . --store $(DEMO_STORE) --embedder $(DEMO_EMBEDDER)
	$(VENV)/gitrag search "$(DEMO_QUERY)" --store $(DEMO_STORE) --limit 5

test: install
	$(VENV)/python -m pytest -m "not slow" -q

test-all: install
	$(VENV)/python -m pytest -q

lint: install
	$(VENV)/ruff check artifacts indexer query hooks tests
