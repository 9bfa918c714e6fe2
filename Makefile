# Two commands on a fresh machine:  make eval PROTOCOL=wiki_hops   and   make test
# Each creates .venv and installs the project into it when needed.

PYTHON   ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
PROTOCOL ?= wiki_hops
MODEL    ?= oracle
ARGS     ?=
comma    := ,
# Reinstall whenever pyproject.toml changes.
STAMP    := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: eval test install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $@

eval: $(STAMP)
	$(BIN)/topoeval run $(PROTOCOL) $(foreach m,$(subst $(comma), ,$(MODEL)),--model $(m)) $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
