"""Install llama-cpp-python into this virtualenv, built for this CPU, with llama.cpp's converters beside it.

    python -m massgen_rl_serving.llama_setup --spec llama-cpp-python==0.3.36 [--wheels DIR]

llama-cpp-python compiles llama.cpp from its source distribution (minutes). The build is portable
(GGML_NATIVE=OFF) with the instruction sets this CPU reports turned on: a native build enables AMX on CPUs
that have it, and that build crashed in its first decode on such a machine. The wheel is kept in --wheels
under a name that includes the flags, so a new virtualenv on the same machine installs it in seconds.

The same source distribution holds llama.cpp's converters (convert_hf_to_gguf.py, convert_lora_to_gguf.py,
their `conversion` package and gguf-py, of the same version); they are copied to
<venv>/share/massgen-rl/llama.cpp/ for gguf_files.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from massgen_rl_common.protocol import ScriptError, log, progress, run_script

from .gguf_files import converters_dir

CONVERTERS = ("convert_hf_to_gguf.py", "convert_lora_to_gguf.py", "conversion/", "gguf-py/")


@dataclass
class SetupArgs:
    """Build (or reuse) and install llama-cpp-python, and install llama.cpp's converters."""

    spec: str = field(metadata={"help": "The pinned requirement, e.g. llama-cpp-python==0.3.36."})
    wheels: str | None = field(
        default=None, metadata={"help": "Where built wheels are kept (default: ~/.cache/massgen-rl/wheels)."}
    )


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def cmake_args(flags: set[str]) -> list[str]:
    """A portable build with what this CPU has turned on (x86); other CPUs get llama.cpp's defaults."""
    args = ["-DGGML_NATIVE=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF"]
    wanted = [
        ("avx", "GGML_AVX"),
        ("avx2", "GGML_AVX2"),
        ("fma", "GGML_FMA"),
        ("f16c", "GGML_F16C"),
        ("avx512f", "GGML_AVX512"),
        ("avx512_vnni", "GGML_AVX512_VNNI"),
        ("avx512_bf16", "GGML_AVX512_BF16"),
        ("avx512vbmi", "GGML_AVX512_VBMI"),
    ]
    args += [f"-D{option}=ON" for flag, option in wanted if flag in flags]
    return args


def main(args: SetupArgs) -> dict[str, object]:
    name, _, version = args.spec.partition("==")
    if not version:
        raise ScriptError(f"--spec must pin a version (name==version), got {args.spec!r}", kind="usage")
    flags = cmake_args(cpu_flags())
    key = hashlib.sha256(" ".join(flags).encode()).hexdigest()[:10]
    wheels = Path(args.wheels or Path.home() / ".cache" / "massgen-rl" / "wheels") / f"{name}-{version}-{key}"
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        sdist = _download(args.spec, Path(tmp))
        wheel = next(wheels.glob("*.whl"), None)
        if wheel is None:
            progress("build", f"building {args.spec} for this CPU ({' '.join(flags)}); this takes several minutes")
            env = {**os.environ, "CMAKE_ARGS": " ".join(flags), "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
            _pip(["wheel", "--no-deps", "-w", str(wheels), str(sdist)], env)
            wheel = next(wheels.glob("*.whl"))
        progress("install", f"installing {wheel.name}")
        _pip(["install", "--no-deps", "--force-reinstall", str(wheel)], dict(os.environ))
        _pip(["install", str(wheel)], dict(os.environ))  # its own dependencies (numpy, jinja2, ...)
        _install_converters(sdist, converters_dir())
    return {"wheel": str(wheel), "converters": str(converters_dir()), "cmake_args": flags}


def _download(spec: str, into: Path) -> Path:
    _pip(["download", "--no-deps", "--no-binary", ":all:", "-d", str(into), spec], dict(os.environ))
    found = [p for p in into.iterdir() if p.name.endswith(".tar.gz")]
    if not found:
        raise ScriptError(f"pip download {spec} produced no source distribution")
    return found[0]


def _install_converters(sdist: Path, target: Path) -> None:
    staging = target.with_name(target.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/vendor/llama.cpp/", 1)
            if len(parts) != 2 or not any(
                parts[1] == c or (c.endswith("/") and parts[1].startswith(c)) for c in CONVERTERS
            ):
                continue
            if not (member.isfile() or member.isdir()):
                continue
            dest = staging / parts[1]
            if member.isdir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, dest.open("wb") as out:  # type: ignore[union-attr]
                shutil.copyfileobj(src, out)
    if not (staging / "convert_hf_to_gguf.py").is_file():
        raise ScriptError(f"{sdist.name} holds no vendor/llama.cpp/convert_hf_to_gguf.py")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    log(f"llama.cpp converters installed in {target}")


def _pip(argv: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *argv],
        env={**env, "PIP_NO_INPUT": "1"},
        stdin=subprocess.DEVNULL,
        stdout=sys.stderr,
        stderr=subprocess.STDOUT,
    )
    if proc.returncode != 0:
        raise ScriptError(f"pip {argv[0]} {argv[-1]} failed (exit {proc.returncode}); its output is above")


if __name__ == "__main__":
    sys.exit(run_script(main, SetupArgs))
