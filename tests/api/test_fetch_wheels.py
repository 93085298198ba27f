"""tools/fetch_wheels.py: the wheels the source-reading tests read, fetched and unpacked where
tests/fieldkit.py looks for them. The fetches here use real pip on a folder of wheels built by
the test (``--find-links``, no index: the tests use no network)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
TOOL = ROOT / "tools" / "fetch_wheels.py"
sys.path.insert(0, str(TOOL.parent))
import fetch_wheels  # noqa: E402  (tools/ is no package)

pytestmark = pytest.mark.slow  # a developer's tool, not ddlab: make test


def _wheel(index: Path, name: str, version: str) -> Path:
    """A pure-Python wheel of ``name`` with a compiled library beside its module."""
    index.mkdir(exist_ok=True)
    path = index / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{name}/__init__.py", f"VERSION = {version!r}\n")
        archive.writestr(f"{name}/csrc/kernel.cu", "// failed with error invalid argument\n")
        archive.writestr(f"{name}/_native.so", b"\x7fELF not really")
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return path


def _tool(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *argv], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize(("name", "version"), [
    ("sglang", "0.5.23"), ("sglang", "0.5.8.post1"), ("vllm", "0.7.3"), ("vllm", "0.6.4.post1"),
    ("triton-ascend", "3.2.0"), ("vllm_ascend", "0.11.0rc0")])
def test_a_release_and_its_folder_name_each_other(name, version, tmp_path):
    inside = fetch_wheels.folder(name, version, tmp_path) / "pkg" / "module.py"
    assert fetch_wheels.release_of(inside, tmp_path) == (name, version)


@pytest.mark.parametrize("path", ["vllm-neuron-a5ef7c8/src/x.py", "vllm/main/vllm/x.py", "sglang/x.py"])
def test_a_folder_named_by_a_commit_is_no_release(path, tmp_path):
    assert fetch_wheels.release_of(tmp_path / path, tmp_path) is None
    assert fetch_wheels.release_of("/elsewhere/sglang-0.5.23/x.py", tmp_path) is None


def test_the_skips_of_a_real_run_name_the_releases_to_fetch(tmp_path):
    """pytest's own -rs output of tests that read missing wheels through tests/fieldkit.py: each
    skip names the command, and --from-skips finds each release once."""
    (tmp_path / "test_reads.py").write_text(textwrap.dedent("""
        import fieldkit

        def test_vllm():
            fieldkit.assert_in_wheel("0.0.9", "vllm/engine/arg_utils.py", "text")

        def test_sglang():
            fieldkit.assert_in_sglang_wheel("0.0.8", "sglang/srt/server_args.py", "text")

        def test_sglang_line():
            fieldkit.assert_at_line("sglang", "0.0.8", "sglang/srt/server_args.py", 3, "text")
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "-p", "no:xdist", str(tmp_path / "test_reads.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "tests")})
    assert "3 skipped" in done.stdout, done.stdout + done.stderr
    assert "python tools/fetch_wheels.py --for /work/wheels/vllm/0.0.9/vllm/engine/arg_utils.py" in done.stdout
    releases, others = fetch_wheels.from_skips(done.stdout)
    assert list(releases) == [("vllm", "0.0.9"), ("sglang", "0.0.8")] and others == []
    assert releases[("vllm", "0.0.9")] == set()  # no compiled library named: none asked for
    log = tmp_path / "pytest.out"
    log.write_text(done.stdout)
    dry = _tool("--from-skips", str(log), "--dry-run", "--wheels", str(tmp_path / "w"))
    assert dry.returncode == 0 and dry.stdout.count("would fetch") == 2, dry.stdout + dry.stderr


def test_fetches_from_a_folder_of_wheels_and_leaves_compiled_libraries_out(tmp_path):
    index, wheels = tmp_path / "index", tmp_path / "wheels"
    _wheel(index, "ddlabprobe", "1.0")
    _wheel(index, "vllm", "0.0.1")
    done = _tool("--wheels", str(wheels), "--find-links", str(index), "ddlabprobe==1.0", "vllm==0.0.1")
    assert done.returncode == 0, done.stdout + done.stderr
    for unpacked in (wheels / "ddlabprobe-1.0" / "ddlabprobe", wheels / "vllm" / "0.0.1" / "vllm"):
        assert (unpacked / "__init__.py").is_file() and (unpacked / "csrc" / "kernel.cu").is_file()
        assert not (unpacked / "_native.so").exists()
    assert not list(wheels.rglob("*.partial"))
    again = _tool("--wheels", str(wheels), "--find-links", str(index), "ddlabprobe==1.0")
    assert again.returncode == 0 and "already unpacked" in again.stdout, again.stdout + again.stderr


def test_a_compiled_library_a_skip_names_is_added_to_the_folder(tmp_path):
    """A test that reads a text inside a compiled library (a kernel's message) names the library's
    path in its skip: that member is unpacked too, into the folder unpacked before."""
    index, wheels = tmp_path / "index", tmp_path / "wheels"
    _wheel(index, "ddlabprobe", "1.0")
    assert _tool("--wheels", str(wheels), "--find-links", str(index), "ddlabprobe==1.0").returncode == 0
    library = wheels / "ddlabprobe-1.0" / "ddlabprobe" / "_native.so"
    log = tmp_path / "pytest.out"
    log.write_text(f"SKIPPED [1] tests/x.py:58: {library} not unpacked here (python tools/fetch_wheels.py "
                   f"--for {library})\n")
    done = _tool("--wheels", str(wheels), "--find-links", str(index), "--from-skips", str(log))
    assert done.returncode == 0 and "added ddlabprobe/_native.so" in done.stdout, done.stdout + done.stderr
    assert library.read_bytes() == b"\x7fELF not really"
    missing = _tool("--wheels", str(wheels), "--find-links", str(index), "--for",
                    str(wheels / "ddlabprobe-1.0" / "ddlabprobe" / "_other.so"))
    assert missing.returncode == 1 and "holds no ddlabprobe/_other.so" in missing.stderr, missing.stderr


def test_a_release_that_is_nowhere_fails_naming_it_and_leaves_no_folder(tmp_path):
    index, wheels = tmp_path / "index", tmp_path / "wheels"
    _wheel(index, "ddlabprobe", "1.0")
    done = _tool("--wheels", str(wheels), "--find-links", str(index), "ddlabprobe==2.0")
    assert done.returncode == 1 and "ddlabprobe==2.0: no wheel" in done.stderr, done.stderr
    assert not (wheels / "ddlabprobe-2.0").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["sglang"], "'sglang': not NAME==VERSION"),
    (["--for", "/somewhere/else.py"], "--for /somewhere/else.py: not inside a release's folder"),
    ([], "nothing to fetch")])
def test_bad_input_is_a_usage_error_naming_it(argv, message):
    done = _tool(*argv)
    assert done.returncode == 2 and message in done.stderr, done.stderr
