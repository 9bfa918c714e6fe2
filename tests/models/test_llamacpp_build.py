"""The portable llama-server build and its install-time self-test."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from topoeval.models import llamacpp_build
from tests.models.llama_procs import require_server


def test_the_default_flags_are_portable_and_key_the_cache(monkeypatch):
    monkeypatch.delenv("TOPOEVAL_LLAMA_CMAKE_ARGS", raising=False)
    flags = llamacpp_build.isa_flags()
    assert "-DGGML_NATIVE=OFF" in flags and not any("AVX512" in f or "AMX" in f for f in flags)
    monkeypatch.setenv("TOPOEVAL_LLAMA_CMAKE_ARGS", "-DGGML_NATIVE=OFF -DGGML_AVX2=OFF")
    assert llamacpp_build.isa_flags() == ("-DGGML_NATIVE=OFF", "-DGGML_AVX2=OFF")
    assert llamacpp_build.build_tag(llamacpp_build.isa_flags()) != llamacpp_build.build_tag(flags)


def test_a_missing_server_is_one_line_naming_the_build_command(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOEVAL_CACHE", str(tmp_path))
    monkeypatch.delenv("TOPOEVAL_LLAMA_SERVER", raising=False)
    with pytest.raises(llamacpp_build.UserError, match=r"not built .*-m topoeval.models.llamacpp_build"):
        llamacpp_build.server_binary()


def test_the_sdist_is_checked_against_its_pinned_sha256_on_every_reuse(tmp_path, monkeypatch, topoeval_cmd):
    """A damaged or replaced cached sdist is one line naming the file to delete (issue 43: the copy
    in the cache was never checked again); the real cached copy passes."""
    monkeypatch.setenv("TOPOEVAL_CACHE", str(tmp_path))
    folder = tmp_path / "sdist"
    folder.mkdir()
    cached = folder / f"llama_cpp_python-{llamacpp_build.LLAMA_CPP_PYTHON}.tar.gz"
    cached.write_bytes(b"not the sdist")
    with pytest.raises(llamacpp_build.UserError) as exc:
        llamacpp_build.fetch_sdist()
    assert f"delete {cached} and run again" in str(exc.value) and "\n" not in str(exc.value)
    proc = subprocess.run([*topoeval_cmd[:1], "-m", "topoeval.models.llamacpp_build", "--sdist"], capture_output=True,
                          text=True, env={**os.environ, "TOPOEVAL_CACHE": str(tmp_path)})
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and str(cached) in proc.stderr
    assert "Traceback" not in proc.stderr
    home = Path.home() / ".cache" / "topoeval" / "sdist" / cached.name
    if not home.is_file():
        pytest.skip(f"no cached sdist at {home} (make install downloads it)")
    cached.unlink()
    cached.symlink_to(home)
    assert llamacpp_build.fetch_sdist() == cached  # the genuine file passes the same check


def test_the_pinned_sha256_is_what_pip_is_asked_to_verify(tmp_path, monkeypatch):
    """The download asks pip for --require-hashes with the pinned sha256 (no network here: pip is
    replaced by a script that records its arguments and 'downloads' a wrong file)."""
    monkeypatch.setenv("TOPOEVAL_CACHE", str(tmp_path))
    seen = {}

    def fake_run(argv, **kwargs):
        seen["argv"] = argv
        req = argv[argv.index("-r") + 1]
        seen["requirements"] = open(req).read()
        dest = argv[argv.index("-d") + 1]
        open(f"{dest}/llama_cpp_python-{llamacpp_build.LLAMA_CPP_PYTHON}.tar.gz", "wb").write(b"tampered")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(llamacpp_build.subprocess, "run", fake_run)
    with pytest.raises(llamacpp_build.UserError, match="is not the pinned"):
        llamacpp_build.fetch_sdist()
    assert "--require-hashes" in seen["argv"]
    assert f"--hash=sha256:{llamacpp_build.SDIST_SHA256}" in seen["requirements"]
    assert not list((tmp_path / "sdist").glob("*.tar.gz"))  # a bad download is never cached


@pytest.mark.local_model
def test_the_built_cpu_backend_has_no_host_specific_instructions():
    """No AVX-512 (zmm registers) or AMX (tile) instructions: the build runs on any x86-64-v3 CPU."""
    import platform

    if platform.machine() != "x86_64" or shutil.which("objdump") is None:
        pytest.skip("an x86-64 check with binutils' objdump")
    require_server()
    folder = llamacpp_build.server_binary().parent
    libs = sorted(folder.glob("libggml-cpu*.so*")) or [llamacpp_build.server_binary()]
    for lib in libs:
        text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(lib)], capture_output=True, text=True).stdout
        assert "%zmm" not in text and "tileloadd" not in text and "tdpbssd" not in text, lib


@pytest.mark.local_model
def test_the_self_test_passes_on_the_build(capsys):
    require_server()
    assert llamacpp_build.main([]) == 0
    assert "self-test passed" in capsys.readouterr().out


#: A stand-in for a llama-server build that crashes on this CPU: a real process that takes
#: llama-server's arguments, answers /health, and dies of a real SIGSEGV on its first decode —
#: what the host-native build did on an AMX Xeon.
CRASHING_SERVER = textwrap.dedent("""\
    #!{python}
    import ctypes, http.server, sys
    port = int(sys.argv[sys.argv.index("--port") + 1])
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b'{{"status":"ok"}}')
        def do_POST(self):
            print("decoding ...", flush=True)
            ctypes.string_at(0)  # SIGSEGV
    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
""")


@pytest.mark.local_model
def test_a_build_that_crashes_fails_the_self_test_with_one_line(tmp_path):
    require_server()
    fake = tmp_path / "llama-server"
    fake.write_text(CRASHING_SERVER.format(python=sys.executable))
    fake.chmod(0o755)
    env = {**__import__("os").environ, "TOPOEVAL_LLAMA_SERVER": str(fake)}
    proc = subprocess.run([sys.executable, "-m", "topoeval.models.llamacpp_build"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "crashed with SIGSEGV" in lines[0] and "TOPOEVAL_LLAMA_CMAKE_ARGS" in lines[0], lines[0]


def test_the_sdist_is_downloaded_once_and_reused(tmp_path, monkeypatch):
    """The binding's install, the server build and the LoRA converter share one download."""
    monkeypatch.setenv("TOPOEVAL_CACHE", str(tmp_path))
    calls = []

    def fake_pip(cmd, **kwargs):  # pip download cannot reach PyPI in the tests: write what it would
        calls.append(cmd)
        dest = cmd[cmd.index("-d") + 1]
        name = f"llama_cpp_python-{llamacpp_build.LLAMA_CPP_PYTHON}.tar.gz"
        (tmp_path / "sdist").mkdir(exist_ok=True)
        __import__("pathlib").Path(dest, name).write_bytes(b"sdist")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(llamacpp_build.subprocess, "run", fake_pip)
    monkeypatch.setattr(llamacpp_build, "SDIST_SHA256", __import__("hashlib").sha256(b"sdist").hexdigest())
    first = llamacpp_build.fetch_sdist()
    second = llamacpp_build.fetch_sdist("for its GGUF converter")
    assert first == second == tmp_path / "sdist" / first.name
    assert first.read_bytes() == b"sdist" and len(calls) == 1
    assert [p.name for p in (tmp_path / "sdist").iterdir()] == [first.name]  # no download folder left


def test_a_failed_sdist_download_is_one_line_and_caches_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOEVAL_CACHE", str(tmp_path))
    monkeypatch.setattr(llamacpp_build.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(
        cmd, 1, "", "ERROR: No matching distribution found for llama-cpp-python==0.3.36\n"))
    with pytest.raises(llamacpp_build.UserError, match="to install its binding .ERROR: No matching") as err:
        llamacpp_build.fetch_sdist("to install its binding")
    assert "\n" not in str(err.value)
    assert list((tmp_path / "sdist").iterdir()) == []
