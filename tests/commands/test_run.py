"""`topoeval run`'s one-line errors for names and forms a new user gets wrong (issue 60): an unknown `-m` name
gets a did-you-mean, `-m my-model --api-base ...` the `direct:my-model` form, and `--trained-on wiki` (no `=`)
the MODEL=TOPOLOGY form. Each ends the command before any run folder is made, exit 2."""

import pytest


def one_line(done) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    return lines[0]


def test_an_unknown_model_name_gets_a_did_you_mean(cli, tmp_path):
    line = one_line(cli("run", "wiki_hops", "-m", "oracel", "--tasks", "1", "--out", tmp_path / "run"))
    assert line.startswith("error: unknown model 'oracel' (did you mean 'oracle'?); known: ")
    assert "direct:oracel" not in line  # no server named: no direct: hint
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("spec, form", [("my-model", "direct:my-model"), ("my-model@hermes", "direct:my-model@hermes")])
def test_a_bare_name_with_an_api_base_suggests_the_direct_form(cli, tmp_path, spec, form):
    line = one_line(cli("run", "wiki_hops", "-m", spec, "--api-base", "http://127.0.0.1:9/v1", "--tasks", "1",
                        "--out", tmp_path / "run"))
    assert line.startswith("error: unknown model 'my-model'; known: ")
    assert line.endswith(f"to evaluate the model the server at --api-base serves, name it {form} "
                         f"(or {form.replace('direct:', 'openai/')})")


def test_trained_on_without_equals_explains_the_model_topology_form(cli, tmp_path):
    line = one_line(cli("run", "wiki_hops", "-m", "oracle", "--trained-on", "wiki", "--tasks", "1",
                        "--out", tmp_path / "run"))
    assert line == ("error: --trained-on wiki: no such folder; give a `topoeval export` folder the model was trained "
                    "on, or MODEL=TOPOLOGY for a transfer matrix's diagonal (e.g. --trained-on oracle=wiki)")


def test_a_planted_weakness_policy_is_taken_by_name_on_the_command_line(tmp_path, cli):
    """planted-<axis> reference policies (#58) are kept out of REFERENCE (the leaderboard's runs) but are models
    the CLI takes, like the API."""
    proc = cli("run", "axis_matrix", "-m", "planted-user", "--tasks", "1", "--topology", "travel",
               "--topology", "travel+no-user",
               "--out", str(tmp_path / "run"), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "unknown model" not in proc.stderr
