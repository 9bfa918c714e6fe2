"""A portable ``llama-server`` built from the llama.cpp source llama-cpp-python's sdist vendors.

Local GGUF models (the embedded SmolLM2, its adapters, any ``gguf:PATH``) run in llama.cpp's own
server, in a process of their own (:mod:`topoeval.models.llama_server`). This module builds that
binary once:

- **Source.** The sdist of llama-cpp-python :data:`LLAMA_CPP_PYTHON` (``pip download``, the only
  step that needs PyPI) carries llama.cpp under ``vendor/llama.cpp`` with ``tools/server``; one
  pinned version for the server, the LoRA converter (:mod:`topoeval.training.lora_gguf`) and the
  in-process library the training check uses. Pinned by its sha256 (:data:`SDIST_SHA256`), checked
  on download and on every reuse of the cached copy: a mismatch is one line naming the file to delete.
- **Portable instruction set.** ``GGML_NATIVE=OFF`` and, on x86-64, the x86-64-v3 set (AVX, AVX2,
  FMA, F16C, BMI2: every x86-64 CPU since 2013-2015). A host-native build compiles in whatever the
  build machine has — AMX tiles on a Sapphire Rapids Xeon, where the native build segfaults on the
  first decode of the embedded model — and a binary cached or copied to another CPU may crash on
  it. llama.cpp's runtime dispatch (``GGML_BACKEND_DL`` + ``GGML_CPU_ALL_VARIANTS``) compiles the CPU
  backend once per variant, several times the build; docs/models.md has the measured trade-off.
  ``$TOPOEVAL_LLAMA_CMAKE_ARGS`` replaces the flags (e.g. ``-DGGML_AVX2=OFF`` for an older CPU).
- **One build for the server and the Python binding.** Shared libraries (``libllama.so``,
  ``libggml*.so``, found through ``$ORIGIN``) beside ``llama-server``, no curl, no OpenSSL, no web UI,
  cached under ``$TOPOEVAL_CACHE/llama-server/<tag>/`` with a ``build.json`` (version, flags,
  compiler, seconds) that run.json copies into its fingerprint. llama-cpp-python (used in-process
  only by the training check, :mod:`topoeval.training.lora_gguf`) is installed without compiling
  (``CMAKE_ARGS=-DLLAMA_BUILD=OFF``) and loads these libraries (:func:`import_llama_cpp`), so no
  second, host-native copy of llama.cpp is ever built.
- **Self-test in a subprocess.** :func:`self_test` starts the built server on the embedded GGUF and
  decodes a few tokens; a crash (a signal), a hang or a wrong answer fails the install with one
  line saying what crashed and how to rebuild, instead of leaving a binary that dies mid-run.

``python -m topoeval.models.llamacpp_build`` builds (if needed) and self-tests; ``make install`` runs
it. ``$TOPOEVAL_LLAMA_SERVER`` names a llama-server binary of your own instead (it is self-tested too).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Literal, overload

from topoeval.core.errors import UserError

#: The llama.cpp source: this llama-cpp-python release's sdist (its vendor/llama.cpp).
LLAMA_CPP_PYTHON = "0.3.36"
#: sha256 of that sdist (llama_cpp_python-0.3.36.tar.gz as PyPI's simple index lists it): pip checks it
#: on download (--require-hashes) and :func:`check_sdist` on every use of the cached file.
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
BINARY = "llama-server"
BUILD_RECORD = "build.json"
COMMON_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DCMAKE_BUILD_RPATH=$ORIGIN", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DGGML_CCACHE=OFF",
)
#: x86-64-v3: what every x86-64 CPU of the last decade runs; nothing host-specific
X86_64_V3 = ("-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
             "-DGGML_BMI2=ON")


def cache_root() -> Path:
    """``$TOPOEVAL_CACHE``, else ``$XDG_CACHE_HOME/topoeval``, else ``~/.cache/topoeval``."""
    if os.environ.get("TOPOEVAL_CACHE"):
        return Path(os.environ["TOPOEVAL_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "topoeval"


def isa_flags() -> tuple[str, ...]:
    """The instruction-set flags of the build: ``$TOPOEVAL_LLAMA_CMAKE_ARGS``, else the portable set."""
    custom = os.environ.get("TOPOEVAL_LLAMA_CMAKE_ARGS")
    if custom is not None:
        return tuple(shlex.split(custom))
    return X86_64_V3 if platform.machine().lower() in ("x86_64", "amd64") else ("-DGGML_NATIVE=OFF",)


def build_tag(flags: tuple[str, ...]) -> str:
    digest = hashlib.sha256("\n".join((LLAMA_CPP_PYTHON, platform.machine(), *COMMON_FLAGS, *flags)).encode())
    return f"{LLAMA_CPP_PYTHON}-{platform.machine()}-{digest.hexdigest()[:12]}"


def build_dir(flags: tuple[str, ...] | None = None) -> Path:
    return cache_root() / "llama-server" / build_tag(isa_flags() if flags is None else flags)


@overload
def server_binary(required: Literal[True] = True) -> Path: ...
@overload
def server_binary(required: bool) -> Path | None: ...
def server_binary(required: bool = True) -> Path | None:
    """The llama-server to run: ``$TOPOEVAL_LLAMA_SERVER``, else the cached portable build."""
    custom = os.environ.get("TOPOEVAL_LLAMA_SERVER")
    path = Path(custom) if custom else build_dir() / BINARY
    if path.is_file() and os.access(path, os.X_OK):
        return path
    if not required:
        return None
    where = f"$TOPOEVAL_LLAMA_SERVER ({custom})" if custom else str(path)
    raise UserError(f"llama.cpp's server is not built ({where} is missing); build it once (about 8 minutes on "
                    f"2 cores, needs PyPI for the source): {sys.executable} -m topoeval.models.llamacpp_build"
                    "  (make install does this)")


def build_record(binary: Path | None = None) -> dict:
    """What is known about the server binary: its ``build.json``, or just its path for one of your own."""
    binary = binary or server_binary()
    record = binary.parent / BUILD_RECORD
    if record.is_file() and not os.environ.get("TOPOEVAL_LLAMA_SERVER"):
        return json.loads(record.read_text())
    return {"binary": str(binary), "source": "TOPOEVAL_LLAMA_SERVER"}


def import_llama_cpp():
    """``import llama_cpp`` on the portable build's libraries (``LLAMA_CPP_LIB_PATH``), not on whatever
    a pip build compiled into its wheel."""
    folder = build_dir()
    if "LLAMA_CPP_LIB_PATH" not in os.environ and (folder / "libllama.so").is_file():
        os.environ["LLAMA_CPP_LIB_PATH"] = str(folder)
    try:
        import llama_cpp
    except ImportError:
        raise UserError("this needs llama-cpp-python: CMAKE_ARGS=-DLLAMA_BUILD=OFF pip install "
                        f"llama-cpp-python=={LLAMA_CPP_PYTHON}  (make install does this)") from None
    return llama_cpp


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_sdist(path: Path) -> Path:
    """``path`` if its sha256 is :data:`SDIST_SHA256`; else one line naming the file to delete."""
    got = file_sha256(path)
    if got != SDIST_SHA256:
        raise UserError(f"{path}: sha256 {got[:16]}... is not the pinned {SDIST_SHA256[:16]}... of "
                        f"llama-cpp-python=={LLAMA_CPP_PYTHON}'s sdist (a damaged or replaced download): delete "
                        f"{path} and run again to download it")
    return path


def fetch_sdist(purpose: str = "to build llama-server") -> Path:
    """llama-cpp-python :data:`LLAMA_CPP_PYTHON`'s sdist, downloaded with pip once into
    ``cache_root()/sdist/`` and reused (the binding's install, the llama-server build and the LoRA
    converter all read this one file); checked against :data:`SDIST_SHA256` on download and on every
    reuse. ``purpose`` completes the error's sentence."""
    folder = cache_root() / "sdist"
    cached = sorted(folder.glob(f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"))
    if cached:
        return check_sdist(cached[0])
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as tmp:
        pinned = Path(tmp) / "requirements.txt"
        pinned.write_text(f"llama-cpp-python=={LLAMA_CPP_PYTHON} --hash=sha256:{SDIST_SHA256}\n")
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", "llama-cpp-python",
             "--require-hashes", "-r", str(pinned), "-d", tmp], capture_output=True, text=True)
        sdists = sorted(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
        if proc.returncode != 0 or not sdists:
            last = (proc.stderr.strip().splitlines() or ["no sdist downloaded"])[-1]
            raise UserError(f"could not download llama-cpp-python=={LLAMA_CPP_PYTHON}'s source {purpose} ({last})")
        check_sdist(sdists[0])
        target = folder / sdists[0].name
        sdists[0].replace(target)  # atomic: a concurrent install sees the whole file or none
    return target


def _cmake() -> str:
    exe = shutil.which("cmake")
    if exe is None:
        raise UserError("building llama-server needs cmake (>= 3.21): pip install cmake, or your system's package")
    return exe


def build(force: bool = False, jobs: int | None = None, log=sys.stderr) -> Path:
    """Build llama-server with the portable flags (cached: a second call returns the same file)."""
    flags = isa_flags()
    out = build_dir(flags)
    binary = out / BINARY
    if binary.is_file() and (out / BUILD_RECORD).is_file() and not force:
        return binary
    cmake = _cmake()
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".build-") as tmp:
        work = Path(tmp)
        sdist = fetch_sdist()
        with tarfile.open(sdist) as tar:
            tar.extractall(work, filter="data")
        source = next(work.glob("llama_cpp_python-*/vendor/llama.cpp"))
        tree = work / "build"
        jobs = jobs or os.cpu_count() or 2
        print(f"building llama-server {LLAMA_CPP_PYTHON} ({' '.join(flags)}) with {jobs} jobs ...", file=log,
              flush=True)
        info: dict[str, str] = {}
        for step in ([cmake, "-S", str(source), "-B", str(tree), *COMMON_FLAGS, *flags],
                     [cmake, "--build", str(tree), "--target", BINARY, "-j", str(jobs)]):
            proc = subprocess.run(step, capture_output=True, text=True)
            info = info or _configure_info(proc.stdout + proc.stderr)
            if proc.returncode != 0:
                lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "error" in ln.lower()] or \
                        (proc.stdout + proc.stderr).strip().splitlines()
                raise UserError(f"building llama-server failed ({' '.join(step[:2])}): "
                                f"{lines[-1] if lines else proc.returncode}")
        built = next(tree.rglob(BINARY), None)
        if built is None:
            raise UserError(f"building llama-server produced no {BINARY} binary")
        staging = work / "out"
        staging.mkdir()
        shutil.copy2(built, staging / BINARY)
        for lib in built.parent.glob("lib*.so*"):  # libllama, libggml*, libmtmd: the server's and llama_cpp's
            shutil.copy2(lib, staging / lib.name, follow_symlinks=False)
        (staging / BUILD_RECORD).write_text(json.dumps({
            "llama_cpp_python": LLAMA_CPP_PYTHON, **info,
            "sdist_sha256": file_sha256(sdist),
            "cmake_flags": [*COMMON_FLAGS, *flags], "machine": platform.machine(),
            "compiler": _compiler_version(), "build_s": round(time.perf_counter() - started, 1),
        }, indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    return binary


def _configure_info(output: str) -> dict[str, str]:
    """``ggml version`` / ``ggml commit`` as llama.cpp's configure step reports them."""
    info = {}
    for key in ("version", "commit"):
        m = re.search(rf"ggml {key}:\s*(\S+)", output)
        if m:
            info[f"ggml_{key}"] = m.group(1)
    return info


def _compiler_version() -> str | None:
    cc = shutil.which("c++") or shutil.which("g++")
    if cc is None:
        return None
    out = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()
    return out[0] if out else None


def self_test(binary: Path | None = None, model: str | None = None, timeout_s: float = 120.0) -> str:
    """Start ``binary`` on the embedded GGUF in its own process and decode a few tokens.

    Returns a one-line success message; raises :class:`UserError` with one line (what crashed, how to
    rebuild) when the server dies, hangs or answers nothing.
    """
    from topoeval.models.embedded import embedded_gguf
    from topoeval.models.llama_server import LlamaServer, ServerDied

    binary = binary or server_binary()
    model = model or embedded_gguf()
    rebuild = ("rebuild with other flags: "
               "TOPOEVAL_LLAMA_CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF' "
               f"{sys.executable} -m topoeval.models.llamacpp_build --force")
    started = time.perf_counter()
    server = None
    try:
        server = LlamaServer(binary, model, slots=1, n_ctx=512, startup_timeout_s=timeout_s)
        data = server.post_sync("/completion", {"prompt": "<|im_start|>user\nSay hello.<|im_end|>\n"
                                                          "<|im_start|>assistant\n",
                                                "n_predict": 8, "temperature": 0.0, "cache_prompt": False},
                                timeout_s=timeout_s)
        n = int(data.get("tokens_predicted") or 0)
        if n < 1:
            raise UserError(f"llama-server self-test: {binary} decoded no token ({data!r:.200}); {rebuild}")
    except ServerDied as exc:
        raise UserError(f"llama-server self-test: {binary} {exc.reason} while decoding a test prompt on this CPU "
                        f"({platform.processor() or platform.machine()}); {rebuild}") from None
    finally:
        if server is not None:
            server.stop()
    return (f"llama-server self-test passed: {binary} decoded {n} tokens of {Path(model).name} "
            f"in {time.perf_counter() - started:.1f} s")


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m topoeval.models.llamacpp_build", description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="rebuild even if a build with these flags is cached")
    ap.add_argument("--jobs", type=int, default=None, help="parallel compile jobs (default: all cores)")
    ap.add_argument("--no-self-test", action="store_true", help="skip the decode test")
    ap.add_argument("--print-path", action="store_true", help="print the binary's path and exit (no build)")
    ap.add_argument("--sdist", action="store_true",
                    help="print the path of llama-cpp-python's cached sdist (downloading it once) and exit")
    args = ap.parse_args(argv)
    try:
        if args.print_path:
            print(server_binary())
            return 0
        if args.sdist:
            print(fetch_sdist("to install its binding"))
            return 0
        binary = server_binary() if os.environ.get("TOPOEVAL_LLAMA_SERVER") else build(args.force, args.jobs)
        if not args.no_self_test:
            print(self_test(binary))
        else:
            print(binary)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
