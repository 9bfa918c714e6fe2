"""One name per idea across commands: old spellings are refused with what to write instead, choices are
enums that --help lists, and the protocol is the first argument of every command that takes one."""


import pytest
from typer.testing import CliRunner

from topoeval.cli import app
from topoeval.commands.spellings import RENAMED, check_spellings
from topoeval.core.errors import UserError

OLD = [(["export", "wiki_hops", "--n", "3", "--out", "x"], "did you mean --tasks?"),
       (["train", "wiki_to_travel", "--n=3"], "did you mean --tasks?"),
       (["sensitivity", "--protocol", "wiki_hops"], "did you mean PROTOCOL, the first argument"),
       (["serve-openenv", "--protocol", "wiki_hops"], "did you mean PROTOCOL, the first argument")]


@pytest.mark.parametrize("argv,hint", OLD, ids=[a[0] for a, _ in OLD])
def test_an_old_spelling_is_one_line_with_the_new_one(argv, hint):
    with pytest.raises(UserError, match=hint):
        check_spellings(argv)


def test_the_new_spellings_and_other_commands_pass():
    check_spellings(["export", "wiki_hops", "--tasks", "3"])
    check_spellings(["run", "wiki_hops", "--model", "oracle", "--tasks", "2"])
    check_spellings(["sweep", "runs/train/x", "--protocol", "wiki_to_travel"])  # sweep's first argument is a training run
    # every renamed command exists and no longer has the old option
    import typer

    commands = typer.main.get_command(app).commands
    for name, renamed in RENAMED.items():
        opts = {o for p in commands[name].params for o in p.opts}
        assert not set(renamed) & opts, name


def test_the_entry_point_prints_it_as_one_line(cli):
    proc = cli("export", "wiki_hops", "--n", "3", "--out", "x")
    assert proc.returncode == 2 and proc.stderr.strip() == ("error: topoeval export --n is spelled differently now: "
                                                           "did you mean --tasks?")


@pytest.mark.parametrize("argv,choices", [(["run", "--help"], ("auto", "native", "prompt", "local", "ray")),
                                          (["export", "--help"], ("train", "dev", "test", "fewshot", "rl", "sft")),
                                          (["serve-mcp", "--help"], ("fewshot",))])
def test_help_lists_the_choices(argv, choices):
    out = CliRunner().invoke(app, argv, env={"COLUMNS": "300"}).output
    assert all(c in out for c in choices), out


def test_a_wrong_choice_is_a_usage_error(cli):
    proc = cli("export", "wiki_hops", "--out", "x", "--split", "holdout")
    assert proc.returncode == 2 and "holdout" in proc.stderr and "Traceback" not in proc.stderr


def test_publish_dry_run_is_a_flag_with_out(tmp_path, cli):
    proc = cli("publish", str(tmp_path), "--repo", "o/n", "--dry-run", str(tmp_path / "d"))
    assert proc.returncode == 2 and f"did you mean --dry-run --out {tmp_path / 'd'}?" in proc.stderr
