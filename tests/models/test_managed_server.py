"""A server started from a --serve template: fields filled (quoted), ready on GET /v1/models, its whole process
group stopped on exit, one-line errors for a bad template or a server that dies."""

import sys
from pathlib import Path

import pytest

from topoeval.core.errors import UserError
from topoeval.models.managed_server import ManagedServer, check_template

STANDIN = Path(__file__).resolve().parents[1] / "serve_standin.py"


@pytest.mark.parametrize(("template", "message"), [
    ("vllm serve {path}", "must place {port}"),
    ("vllm serve --port {port}", "must place {path} .* or {lora_modules}"),
    ("vllm serve {path} --port {port} --x {model}", r"unknown field \{model\}"),
    ("vllm serve {path --port {port}", "--serve"),
])
def test_a_bad_template_is_one_line(template, message):
    with pytest.raises(UserError, match=message):
        check_template(template)


def test_the_server_is_ready_lists_its_models_and_stops(tmp_path):
    ckpt = tmp_path / "my checkpoint"  # a path with a space stays one argument
    ckpt.mkdir()
    (ckpt / "variant.txt").write_text("oracle")
    with ManagedServer(f"{sys.executable} {STANDIN} --port {{port}} --path {{path}} --name {{name}}", path=ckpt,
                       name="step-3") as server:
        assert server.alive() and server.models() == ["step-3"]
        assert server.cmd[server.cmd.index("--path") + 1] == str(ckpt)
        pid = server.proc.pid
    assert not server.alive() and not Path(f"/proc/{pid}").exists()


def test_lora_modules_become_one_argument_each(tmp_path):
    server = ManagedServer(f"{sys.executable} {STANDIN} --port {{port}} --lora-modules {{lora_modules}}",
                           lora_modules={"step-1": str(tmp_path / "a b"), "step-2": str(tmp_path / "c")})
    try:
        i = server.cmd.index("--lora-modules")
        assert server.cmd[i + 1:] == [f"step-1={tmp_path / 'a b'}", f"step-2={tmp_path / 'c'}"]
    finally:
        server.stop()


def test_a_server_that_exits_is_one_line_with_its_log(tmp_path):
    with pytest.raises(UserError, match=r"exited with code 3 before answering \(last log line: stand-in: refusing"):
        with ManagedServer(f"{sys.executable} {STANDIN} --port {{port}} --path {{path}} --fail", path=tmp_path):
            pass
    with pytest.raises(UserError, match="could not start 'no-such-server-binary'"):
        ManagedServer("no-such-server-binary --port {port} {path}", path=tmp_path)
