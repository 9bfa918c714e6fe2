"""``make mutants``: mutation testing (mutmut 3) of the modules whose mistakes would change published numbers
or lose data, each with the tests that cover it (docs/development.md, "Mutation testing").

    .venv-mutants/bin/python -m tests.mutants [MODULE ...]     # default: every module of TARGETS, in order

mutmut reads its settings from the pyproject.toml of the folder it runs in, so each module runs in a
workspace of its own, ``.venv-mutants/work/<module>/`` (ignored by git, like the virtualenv): the
package and the tests linked in, a pyproject.toml written here with the module to mutate and its tests,
and mutmut's ``mutants/`` copy. The checkout itself is never changed (mutmut mutates its copy, one
function's variants switched by an environment variable). Every run starts fresh, prints the module's
kill rate and time, and writes each survivor's diff to the workspace's ``survivors.txt``.

A mutant is *killed* when a covering test fails; *survived* when they all pass; *no tests* when no
selected test calls its function (a hole too: the module's map below lacks a test file, or no test
reaches that code). Survivors judged equivalent (no observable difference) are listed in
:data:`EQUIVALENT` with the reason; the rate over the others is the goal's (at least 90 %).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".venv-mutants" / "work"

#: module -> the test files that cover it (the one place this mapping lives; pytest options such as --deselect may
#: follow), the fastest killers first (a mutant's tests stop at the first failure); smallest modules first
TARGETS: dict[str, list[str]] = {
    "topoeval/core/yamlfile.py": ["tests/core/test_yamlfile.py", "tests/protocol/test_bad_input.py"],
    "topoeval/runner/records.py": ["tests/runner/test_records.py", "tests/runner/test_episode_file.py"],
    "topoeval/analysis/stats.py": ["tests/analysis/test_stats.py", "tests/analysis/test_stats_edges.py",
                                   "tests/analysis/test_paired.py"],
    "topoeval/metrics/scoring.py": ["tests/metrics/test_scoring.py", "tests/runner/test_episode.py"],
    "topoeval/metrics/collateral.py": ["tests/metrics/test_collateral.py", "tests/metrics/test_scoring.py"],
    "topoeval/analysis/collapse.py": ["tests/analysis/test_collapse_nulls.py", "tests/analysis/test_collapse.py"],
    # the shipped transfer_matrix's tests need the bfcl and agentdojo suites, which this virtualenv leaves out (33 s
    # of set-up for every mutant that reaches them)
    "topoeval/analysis/matrix.py": ["tests/analysis/test_matrix_attribution.py", "tests/analysis/test_matrix_rows.py",
                                    "tests/analysis/test_sweep_paired.py", "tests/analysis/test_matrix.py",
                                    "--deselect=tests/analysis/test_matrix.py::test_the_reference_policies_give_the_"
                                    "expected_pattern_on_the_shipped_matrix",
                                    "--deselect=tests/analysis/test_matrix.py::test_a_matrix_run_resumes_without_"
                                    "running_a_finished_episode_again"],
    "topoeval/runner/merged.py": ["tests/runner/test_merged.py", "tests/runner/test_merged_conflicts.py",
                                  "tests/runner/test_merge_trust.py"],
    # (tests/runner/test_store.py runs protocols: 8 minutes here with it, for no mutant only it kills)
    "topoeval/runner/episode_file.py": ["tests/runner/test_episode_file_edges.py", "tests/runner/test_episode_file.py",
                                        "tests/runner/test_store_repair.py"],
    # (tests/runner/test_store.py runs protocols: 8 minutes here with it; test_store_edges.py checks the same
    # bookkeeping without a run)
    "topoeval/runner/store.py": ["tests/runner/test_store_edges.py", "tests/runner/test_store_repair.py",
                                 "tests/runner/test_episode_file.py"],
    "topoeval/runner/lock.py": ["tests/runner/test_lock_edges.py", "tests/runner/test_lock.py"],
    # (tests/metrics/test_properties.py loads every shipped protocol: it needs the bfcl and agentdojo suites, which
    # this virtualenv leaves out)
    "topoeval/metrics/dimensions.py": ["tests/metrics/test_dimensions_faults.py",
                                       "tests/metrics/test_dimensions_record.py", "tests/metrics/test_dimensions.py",
                                       "tests/metrics/test_progress.py",
                                       "tests/metrics/test_unanswered.py"],
    "topoeval/publish/tables.py": ["tests/publish/test_tables.py", "tests/publish/test_tables_collateral.py",
                                   "tests/publish/test_publish.py"],
}

#: surviving mutants with no observable difference: mutmut's name -> why (kept out of the goal's rate)
EQUIVALENT: dict[str, str] = {
    "topoeval.core.yamlfile.x__check__mutmut_29": "`event.anchor or \"XXXX\"`: an AliasEvent always has an anchor",
    "topoeval.core.yamlfile.x_compose_yaml__mutmut_8": "yaml.compose without Loader=SafeLoader: composing builds nodes "
    "only (no constructor runs) and both loaders resolve tags alike; the data comes from safe_load beside it",
    "topoeval.core.yamlfile.x_decode_yaml__mutmut_20": '"UTF-8" and "utf-8" name the same codec',
    "topoeval.core.yamlfile.x_decode_yaml__mutmut_31": "bytes.count(sub, None, end) starts at 0 too",
    "topoeval.core.yamlfile.x_decode_yaml__mutmut_56": "bytes.count(sub, None, end) starts at 0 too",
    **{f"topoeval.runner.records.x_record_problem__mutmut_{n}": "include_url/include_input of ValidationError.errors() "
       "change fields record_problem never reads (it reads loc and msg)" for n in (11, 12, 13, 14)},
    "topoeval.runner.records.x_record_problem__mutmut_18": "the separator of loc's parts: every field EpisodeRecord "
    "checks is top-level and its validators fail on the field, so loc has one part",
    **{f"topoeval.analysis.stats.x_bootstrap_ci__mutmut_{n}": "scipy's bootstrap with vectorized=None/False/omitted: "
       "the same resamples and the same CI (np.mean is vectorized; only the speed differs)" for n in (15, 23, 32)},
    **{f"topoeval.analysis.stats.x_bootstrap_ci__mutmut_{n}": "np.asarray without dtype=float: the per-task means "
       "are floats already" for n in (26, 28)},
    "topoeval.analysis.stats.x_bootstrap_ci__mutmut_30": 'scipy lower-cases the method ("PERCENTILE" is "percentile")',
    **{f"topoeval.analysis.stats.x_bootstrap_ci__mutmut_{n}": "the batch size: scipy draws from the same stream in "
       "any batch (test_the_bootstrap_draws_in_bounded_batches_with_the_same_ci)" for n in (37, 42)},
    **{f"topoeval.analysis.stats.x_bootstrap_ci__mutmut_{n}": "per_task[1] where all values are equal (and there "
       "are at least 2)" for n in (6, 7)},
    "topoeval.analysis.stats.x_pass_at_k__mutmut_1": "`n + c < k` for `n - c < k`: where they differ, "
    "math.comb(n - c, k) is 0, so the formula gives the same 1.0",
    "topoeval.analysis.stats.xǁFoldǁadd__mutmut_10": "`>` for `>=`: with |total| = |x| both branches compute the "
    "same float (total = x, or total = -x and t = 0)",
    **{f"topoeval.analysis.stats.xǁMetricFoldǁ__init____mutmut_{n}": 'array("Q") for array("q"): counts and hits '
       "are never negative" for n in (10, 13)},
    "topoeval.analysis.stats.xǁMetricFoldǁ__init____mutmut_15": 'an initial task of "" for None: the first add '
    "finds nothing open to close either way",
    "topoeval.analysis.stats.xǁMetricFoldǁ__init____mutmut_17": "an initial hit count of 1: the first add's "
    "close_task resets it to 0 before any value is counted",
    "topoeval.analysis.stats.xǁMetricFoldǁclose_task__mutmut_1": "`or` for `and`: a task is open exactly when it "
    "has a value (add sets both)",
    **{f"topoeval.analysis.stats.xǁMetricFoldǁstats__mutmut_{n}": "zip(strict=...): the counts and hits arrays "
       "always grow together" for n in (65, 68, 69)},
    "topoeval.analysis.matrix.x_build_matrix__mutmut_94": "`break` for `continue` when the row has no train "
    "topology: nothing after it in the loop applies to such a row (own is already None)",
    **{f"topoeval.analysis.matrix.x_matrix_vs_base__mutmut_{n}": "the labels and the baseline given to compare_cell: "
       "paired_entry, what the section keeps, carries neither" for n in (68, 69, 74, 75, 76)},
    "topoeval.runner.merged.xǁMergedRecordsǁ__init____mutmut_19": "-2 for -1 as the 'no file yet' mark: every test "
    "of it is `< 0` or `>= 0`",
    **{f"topoeval.runner.merged.xǁMergedRecordsǁ_fold_file__mutmut_{n}": "the warning's stacklevel: only which "
       "caller's line the warning names; not checkable here (mutmut's trampolines add stack frames)" for n in (34, 35)},
    "topoeval.runner.episode_file.x__parse__mutmut_5": '"UTF-8" and "utf-8" name the same codec',
    "topoeval.runner.store.x_read_json__mutmut_5": '"UTF-8" and "utf-8" name the same codec',
    "topoeval.runner.store.x_record_line__mutmut_13": '"UTF-8" and "utf-8" name the same codec',
    "topoeval.runner.store.x_record_line__mutmut_7": "ensure_ascii=None is falsy, as False is",
    "topoeval.runner.store.xǁEpisodeStoreǁ_load__mutmut_36": "warn=None is falsy, as False is",
    **{f"topoeval.runner.lock.x__open_nofollow__mutmut_{n}": "the lock file's creation mode: _open sets 0600 with "
       "fchmod right after" for n in (7, 11)},
    **{f"topoeval.runner.lock.x__owner__mutmut_{n}": "bytes.decode's default codec is UTF-8" for n in (17, 24)},
    **{f"topoeval.runner.lock.x__owner__mutmut_{n}": "an empty lock file: json.loads of the mutated text fails, "
       "which _owner also answers with None" for n in (27, 28)},
    "topoeval.runner.lock.x__write_owner__mutmut_20": "ftruncate to 1 byte before pwrite at 0: the owner's line "
    "overwrites that byte",
    "topoeval.runner.lock.xǁRunLockǁ__init____mutmut_1": "upgraded=True by default for a fresh hold: its release "
    "then clears and re-locks the descriptor it closes right after (the same end: no lock, an empty owner)",
    "topoeval.runner.lock.xǁRunLockǁrelease__mutmut_4": "held.exclusive = None is falsy, as False is",
    **{f"topoeval.metrics.dimensions.{name}": "zip(strict=...): the two sequences always have the same length"
       for name in ("x_priority__mutmut_48", "x_priority__mutmut_51", "x_priority__mutmut_52",
                    "x_serial_violations__mutmut_20", "x_serial_violations__mutmut_23",
                    "x_serial_violations__mutmut_24")},
    **{f"topoeval.metrics.dimensions.x__too_early__mutmut_{n}": "another 'never' turn for an instruction that "
       "never starts (11**9 or 10**10 for 10**9): larger than any turn either way" for n in (6, 7)},
    **{f"topoeval.metrics.dimensions.x_serial_violations__mutmut_{n}": "another 'never seen' turn for a dependency "
       "not called yet (11**9 or 10**10 for 10**9): larger than any turn either way" for n in (34, 35)},
    **{f"topoeval.metrics.dimensions.x__instruction_at__mutmut_{n}": "max's default (None, 1 or none for 0): never "
       "used, since instruction_starts always puts instruction 0 at turn 0 (the runner marks only instructions "
       "> 0) and turns start at 0, so some start is at or before every turn" for n in (2, 4, 6)},
    "topoeval.metrics.dimensions.x_commit_faults__mutmut_43": "-2 for -1 as the call index of an untagged event: "
    "both are below every commit's index (0 or more; an untagged commit's is 0)",
    **{f"topoeval.metrics.dimensions.x_decision_quality__mutmut_{n}": "an argument of parallelism or efficiency "
       "(tools, task, events, done) dropped or None: given done, they read their plan from it and use the others "
       "only to compute it; without done, they compute the same progress from the same arguments"
       for n in (40, 41, 46, 49, 52, 53, 58)},
    "topoeval.metrics.dimensions.x_decision_quality__mutmut_85": "coverage without the `if done.nodes` test: a "
    "plan without world nodes expects nothing, so done.coverage is None already",
    "topoeval.metrics.dimensions.x_efficiency__mutmut_24": "`precision or 1.0`: precision is 0 only when no call "
    "matched a node, and then coverage is 0 too (the product is 0 either way); it is None only without counted "
    "calls, which returns before",
    "topoeval.metrics.dimensions.x_priority__mutmut_7": "_commits(None, ...): _commits does not read its task",
    **{f"topoeval.runner.store.x__copy__mutmut_{n}": "the chunk size (1 or 2 MiB): the same bytes copied"
       for n in (13, 14)},
    "topoeval.runner.store.x__copy__mutmut_6": "`size >= 0`: one more read of 0 bytes, which ends the loop",
    "topoeval.runner.store.xǁEpisodeStoreǁ__init____mutmut_15": "one slot without a plan: it stays -1 (no record), "
    "which counts() counts neither way, and no key has a position in it",
    **{f"topoeval.runner.store.{name}": "the 'no descriptor' mark or its test (-1/-2, `< 0`/`<= 0`/`< 1`): the "
       "file's descriptor is never 0 (the process's standard input holds it)"
       for name in ("xǁEpisodeStoreǁ__init____mutmut_22", "xǁEpisodeStoreǁappend__mutmut_3",
                    "xǁEpisodeStoreǁappend__mutmut_4", "xǁEpisodeStoreǁclose__mutmut_3",
                    "xǁEpisodeStoreǁclose__mutmut_4", "xǁEpisodeStoreǁclose__mutmut_7")},
    "topoeval.runner.store.xǁEpisodeStoreǁ_repair__mutmut_17": "`return True` after cutting a tail: the store reads "
    "the file again and finds the same offsets (slower, the same result)",
    "topoeval.runner.store.xǁEpisodeStoreǁ_repair__mutmut_22": "the initial last chunk: a rewrite always copies the "
    "whole line after the damage, so it is replaced before it is read",
    **{f"topoeval.runner.store.xǁEpisodeStoreǁ_repair__mutmut_{n}": "sorting the damaged lines by their whole tuple "
       "(line number first): the same order as by offset" for n in (24, 26)},
    **{f"topoeval.runner.store.xǁEpisodeStoreǁ_repair__mutmut_{n}": "`and last` for `or last` only loses whether the "
       "rewritten file ends in a newline, and the load that follows the rewrite adds a missing one (in place)"
       for n in (30, 43)},
    **{f"topoeval.runner.store.xǁEpisodeStoreǁ_load__mutmut_{n}": "the warning's stacklevel: only which caller's "
       "line the warning names; not checkable here (mutmut's trampolines add stack frames)" for n in (21, 22)},
    "topoeval.runner.episode_file.x__parse__mutmut_1": "orjson.loads(None) raises orjson's JSONDecodeError, so the "
    "standard library parses the line instead: the same value, only slower",
    "topoeval.runner.episode_file.x_not_regular__mutmut_4": "str(None) where strerror is empty: lstat's OSError "
    "always has a strerror",
    **{f"topoeval.runner.episode_file.x_open_regular__mutmut_{n}": "getattr's default for O_NONBLOCK/O_CLOEXEC: "
       "both exist on Linux; and Python's os.open makes every descriptor non-inheritable itself (PEP 446), so "
       "O_CLOEXEC adds nothing there" for n in (14, 17, 20, 21, 23, 26, 27, 28, 29)},
    **{f"topoeval.runner.episode_file.{name}": "the warning's stacklevel: only which caller's line the warning names; "
       "not checkable here (mutmut's trampolines add stack frames)"
       for name in ("x_walk__mutmut_9", "x_walk__mutmut_12", "x_scan__mutmut_24", "x_scan__mutmut_25",
                    "x_warn_skipped__mutmut_1", "x_warn_skipped__mutmut_7")},
    **{f"topoeval.publish.tables.{name}": "json.dumps(ensure_ascii=None): None is falsy, as False is (the same "
       "text)" for name in ("x__text__mutmut_6", "x_collateral_columns__mutmut_34", "x_episode_rows__mutmut_112",
                            "x_episode_rows__mutmut_125", "x_episode_rows__mutmut_138", "x_episode_rows__mutmut_151")},
    **{f"topoeval.publish.tables.x_episode_rows__mutmut_{n}": "the default of a field every record read has: "
       "read_episodes skips a record without sample or messages (runner/records.py's EpisodeRecord requires both)"
       for n in (68, 70, 73, 129, 131)},
    **{f"topoeval.publish.tables.x_result_rows__mutmut_{n}": "incomplete = bool(cell.get('n_errors', None or "
       "nothing)): bool(None) is False, as bool(0) is" for n in (171, 173)},
    **{f"topoeval.publish.tables.x_result_rows__mutmut_{n}": "meta.get('inference', None or nothing): that branch "
       "runs only where the condition before it found run.json's inference" for n in (229, 231)},
    **{f"topoeval.publish.tables.x_result_rows__mutmut_{n}": "the warning's stacklevel: only which caller's line "
       "the warning names; not checkable here (mutmut's trampolines add stack frames)" for n in (44, 48)},
    **{f"topoeval.publish.tables.x_result_rows__mutmut_{n}": "a key of the missing success metric's stand-in "
       "renamed (std, ci95, n): each column's getter falls back to the same None, [None, None] or 0"
       for n in (62, 63, 64, 65, 66, 67)},
    "topoeval.metrics.collateral.x__collection__mutmut_13": "\"XXXX\" for \"\" as the collection of a name without a "
    "dot: every such name still shares one collection; it differs only from a name whose first part is empty (\".x\", "
    "an empty key in the snapshot), which no world has",
    **{f"topoeval.metrics.collateral.x__natural__mutmut_{n}": "the tags and constant fields of the sort key: re.split "
       "with one capturing group alternates text and digits, so a digit part is only ever compared with a digit part "
       "(by its number) and a text part with a text part (by its text)" for n in (3, 5, 6, 7)},
    **{f"topoeval.metrics.collateral.x__same_modulo_id__mutmut_{n}": "rsplit('.') or rsplit('.', 2) for rsplit('.', "
       "1): the same last part" for n in (5, 8, 14, 17)},
    **{f"topoeval.metrics.collateral.x_classify__mutmut_{n}": "the order entities are visited in: each adds its own "
       "entry, nothing else, and the entries are sorted by _natural at the end" for n in (63, 65, 184, 186)},
    **{f"topoeval.metrics.collateral.x_classify__mutmut_{n}": "a `gold is not None` test made always true: where gold "
       "is None, pair_created has no gold entity to pair (so pairs and gold_new are empty and the branch is never "
       "reached)" for n in (26, 75, 202)},
}

#: mutmut's exit codes by what they mean (mutmut.stats.status_by_exit_code); a test process the mutant made crash
#: (SIGABRT, SIGKILL, SIGSEGV) or run out of time counts as killed: the tests did not pass
KILLED, SURVIVED, NO_TESTS, TIMEOUT = {1, 3, 37, -6, -9, -11}, {0}, {5, 33}, {24, -24, 36, 152, 255}


def workspace(module: str) -> Path:
    """A fresh workspace for ``module``: links to the checkout, and a pyproject.toml that tells mutmut what to do."""
    work = WORK / module.removesuffix(".py").replace("/", ".")
    shutil.rmtree(work, ignore_errors=True)
    (work / "mutants").mkdir(parents=True)
    for name in ("topoeval", "tests"):  # mutmut copies these into mutants/ (the package, then the tests)
        (work / name).symlink_to(ROOT / name)
    for entry in ROOT.iterdir():  # what else the tests read (protocols, suites, adapters, docs), linked
        if entry.name not in ("topoeval", "tests", "pyproject.toml", "mutants") and not entry.name.startswith(
                (".venv", ".git")):
            (work / "mutants" / entry.name).symlink_to(entry)
    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    tests = TARGETS[module]
    text = ["[tool.pytest.ini_options]"] + [f"{k} = {json.dumps(v)}" for k, v in pytest_options.items()] + [
        "", "[tool.mutmut]", 'source_paths = ["topoeval"]', f"only_mutate = {json.dumps([module])}",
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-n", "0"]',
        "use_git_change_detection = false", ""]
    (work / "pyproject.toml").write_text("\n".join(text))
    return work


def statuses(work: Path, module: str) -> dict[str, int | None]:
    """mutmut's exit code of each mutant of ``module`` (None: not run)."""
    meta = json.loads((work / "mutants" / (module + ".meta")).read_text())
    return meta["exit_code_by_key"]


def run(module: str) -> dict[str, object]:
    """Mutation-test one module; its counts, kill rates and seconds (survivors' diffs in survivors.txt)."""
    missing = [t for t in TARGETS[module] if not t.startswith("-") and not (ROOT / t).exists()]
    if missing:
        raise SystemExit(f"error: {module}: test file(s) not found: {', '.join(missing)} (tests/mutants.py TARGETS)")
    work = workspace(module)
    mutmut = [str(Path(sys.executable).with_name("mutmut"))]
    env = {**os.environ, "PYTHONPATH": str(work / "mutants")}  # a subprocess a test starts imports the mutant too
    start = time.monotonic()
    proc = subprocess.run([*mutmut, "run"], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    seconds = time.monotonic() - start
    (work / "mutmut.log").write_text(proc.stdout)
    if proc.returncode != 0 or not (work / "mutants" / (module + ".meta")).exists():
        print(proc.stdout[-4000:])
        raise SystemExit(f"error: {module}: mutmut failed (exit {proc.returncode}); its output: {work / 'mutmut.log'}")
    codes = statuses(work, module)
    killed = [k for k, c in codes.items() if c in KILLED | TIMEOUT]
    survived = sorted(k for k, c in codes.items() if c in SURVIVED)
    untested = sorted(k for k, c in codes.items() if c in NO_TESTS)
    other = sorted(k for k, c in codes.items() if k not in killed and k not in survived and k not in untested)
    open_ = [k for k in survived + untested + other if k not in EQUIVALENT]
    prefix = module.removesuffix(".py").replace("/", ".") + "."
    stale = [k for k in EQUIVALENT if k.startswith(prefix) and k not in survived + untested + other]
    judged = len(codes) - (len(survived + untested + other) - len(open_))
    with (work / "survivors.txt").open("w") as out:
        for name in survived + untested + other:
            diff = subprocess.run([*mutmut, "show", name], cwd=work, env=env, capture_output=True, text=True).stdout
            why = EQUIVALENT.get(name)
            out.write(f"{diff.rstrip()}\n" + (f"# equivalent: {why}\n" if why else "") + "\n")
    result = {"module": module, "mutants": len(codes), "killed": len(killed), "survived": len(survived),
              "no_tests": len(untested), "other": len(other), "equivalent": len(codes) - judged,
              "kill_rate": len(killed) / len(codes) if codes else 1.0,
              "kill_rate_non_equivalent": len(killed) / judged if judged else 1.0, "seconds": round(seconds),
              "open": open_, "stale": stale, "survivors": str(work / "survivors.txt")}
    return result


def main(argv: list[str]) -> int:
    modules = argv or list(TARGETS)
    unknown = [m for m in modules if m not in TARGETS]
    if unknown:
        print(f"error: no tests are mapped for {', '.join(unknown)}; modules: {', '.join(TARGETS)}", file=sys.stderr)
        return 2
    short = 0
    for module in modules:
        r = run(module)
        print(f"{module}: {r['killed']}/{r['mutants']} killed ({r['kill_rate']:.0%}), {r['survived']} survived, "
              f"{r['no_tests']} without a test, {r['equivalent']} equivalent; non-equivalent killed "
              f"{r['kill_rate_non_equivalent']:.1%} in {r['seconds']} s", flush=True)
        if r["open"]:
            print(f"  not killed: {', '.join(r['open'])} (diffs: {r['survivors']})", flush=True)
        if r["stale"]:  # the function changed (mutmut numbers each function's mutants) or a test now kills it
            print(f"  listed as equivalent but not a survivor now (check EQUIVALENT): {', '.join(r['stale'])}",
                  flush=True)
        short += r["kill_rate_non_equivalent"] < 0.9  # type: ignore[operator]
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
