"""Fetch and unpack the release wheels that the source-reading tests read (they skip without them).

Contract::

    python tools/fetch_wheels.py sglang==0.5.23 vllm==0.7.3 ...    # these releases
    python tools/fetch_wheels.py --for /work/wheels/vllm/0.7.3/vllm/config.py   # what a skip named
    python tools/fetch_wheels.py --from-skips pytest.out            # every wheel a run skipped for
                                 [--wheels DIR] [--find-links DIR] [--dry-run]

A rule in ddlab's diagnosis cites the real source (``sglang 0.5.19
srt/model_loader/utils.py:154``) and its test checks the text there, in the
release's wheel unpacked under ``WHEELS`` (tests/fieldkit.py): vLLM as
``WHEELS/vllm/VERSION/vllm/...``, any other package as
``WHEELS/NAME-VERSION/...`` (``sglang-0.5.23/sglang/...``,
``triton-3.4.0/triton/...``). Where a release is not there the test skips and
its reason names the path; ``--from-skips`` reads those reasons from a pytest
output (``-rs``) and fetches each release once.

Each release: ``pip download --no-deps --only-binary=:all: NAME==VERSION``
into ``WHEELS/dl/`` (kept: a second run downloads nothing), then every member
of the wheel but compiled libraries (``.so``, ``.pyd``, ``.dylib``, ``.a``)
unpacked into a temporary folder that is renamed into place, so a folder that
exists is whole. ``--find-links DIR`` takes wheels from ``DIR`` only (no
index). A folder named by a commit (``vllm-neuron-a5ef7c8``, from a git
checkout) has no release to fetch: said, not tried. Exit 0 when every release
asked for is unpacked, 1 when one could not be, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

WHEELS = Path("/work/wheels")
BINARY = re.compile(r"\.(so(\.[\d.]+)?|pyd|dylib|a)$")
# PEP 440's public versions, loosely: a release starts with a digit (0.5.8.post1, 0.11.0rc0)
_VERSION = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")
_SKIP = re.compile(r"(/\S*?/wheels)/(\S+)")


def folder(name: str, version: str, wheels: Path = WHEELS) -> Path:
    """Where release ``name==version`` is unpacked (tests/fieldkit.py's layout)."""
    return wheels / "vllm" / version if name == "vllm" else wheels / f"{name}-{version}"


def release_of(path: str | Path, wheels: Path = WHEELS) -> tuple[str, str] | None:
    """``(name, version)`` of the release whose unpacked folder holds ``path``; None where the
    folder is named by a commit or ``path`` is not under ``wheels``."""
    found = _split(path, wheels)
    return found[0] if found else None


def _split(path: str | Path, wheels: Path) -> tuple[tuple[str, str], str] | None:
    """(the release, ``path`` inside its folder) or None (see :func:`release_of`)."""
    try:
        parts = Path(path).relative_to(wheels).parts
    except ValueError:
        return None
    if len(parts) >= 2 and parts[0] == "vllm":
        return (("vllm", parts[1]), "/".join(parts[2:])) if _VERSION.match(parts[1]) else None
    if not parts:
        return None
    name, _, version = parts[0].rpartition("-")
    return ((name, version), "/".join(parts[1:])) if name and _VERSION.match(version) else None


def from_skips(text: str) -> tuple[dict[tuple[str, str], set[str]], list[str]]:
    """The releases a pytest output's skip reasons name, in order, each with the compiled libraries
    of it that a reason names (a test that reads a text inside one), and the folders named there
    that are no release (a commit's)."""
    releases: dict[tuple[str, str], set[str]] = {}
    others: list[str] = []
    for line in text.splitlines():
        if not line.startswith("SKIPPED"):
            continue
        for root, path in _SKIP.findall(line):
            path = path.rstrip("):,.")
            found = _split(Path(root) / path, Path(root))
            if found:
                releases.setdefault(found[0], set()).update([found[1]] if BINARY.search(found[1]) else [])
            elif (first := path.split("/")[0]) != "vllm" and first not in others:
                others.append(first)
    return releases, others


def _requirement(text: str) -> tuple[str, str]:
    name, sep, version = text.partition("==")
    if not sep or not name or not _VERSION.match(version):
        raise argparse.ArgumentTypeError(f"{text!r}: not NAME==VERSION (e.g. sglang==0.5.23)")
    return name, version


def _wheel_file(downloads: Path, name: str, version: str) -> Path | None:
    stem = re.sub(r"[-_.]+", "_", name).lower()
    for path in sorted(downloads.glob("*.whl")):
        parts = path.name.split("-")
        if re.sub(r"[-_.]+", "_", parts[0]).lower() == stem and parts[1] == version:
            return path
    return None


def download(name: str, version: str, downloads: Path, find_links: Path | None = None) -> Path:
    """The wheel of ``name==version`` in ``downloads``, fetched there with pip where absent (from
    ``find_links`` only, no index, where given); FileNotFoundError (pip's last lines) where none could be
    had. tools/sglang_flags.py fetches its wheels with it too."""
    downloads.mkdir(parents=True, exist_ok=True)
    wheel = _wheel_file(downloads, name, version)
    if wheel is None:
        argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                "--no-deps", "--only-binary=:all:", "-d", str(downloads), f"{name}=={version}"]
        if find_links is not None:
            argv[4:4] = ["--no-index", "--find-links", str(find_links)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        wheel = _wheel_file(downloads, name, version)
        if done.returncode or wheel is None:
            said = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise FileNotFoundError(f"{name}=={version}: no wheel ({' / '.join(said) or 'pip said nothing'})")
    return wheel


def fetch(name: str, version: str, wheels: Path, find_links: Path | None = None,
          libraries: set[str] | frozenset[str] = frozenset()) -> str:
    """Unpack ``name==version`` into its folder, with the compiled ``libraries`` named (paths inside
    it); what was done, in a few words. Raises FileNotFoundError (:func:`download`) where no wheel could
    be had, RuntimeError where the wheel lacks a library asked for."""
    target = folder(name, version, wheels)
    missing = sorted(lib for lib in libraries if not (target / lib).is_file())
    if target.is_dir() and not missing:
        return f"{target}: already unpacked"
    wheel = download(name, version, wheels / "dl", find_links)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        if absent := [lib for lib in missing if lib not in names]:
            raise RuntimeError(f"{name}=={version}: {wheel.name} holds no {', '.join(absent)}")
        members = missing if target.is_dir() else \
            [m for m in names if not m.endswith("/") and (not BINARY.search(m) or m in missing)]
        for member in members:
            if member.startswith("/") or ".." in Path(member).parts:
                raise RuntimeError(f"{wheel.name}: member {member!r} leaves the folder; not unpacked")
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        archive.extractall(partial, members)
    if target.is_dir():  # a library added to a folder unpacked before: each file moved in whole
        for member in members:
            (target / member).parent.mkdir(parents=True, exist_ok=True)
            (partial / member).rename(target / member)
        shutil.rmtree(partial)
        return f"{target}: added {', '.join(members)} from {wheel.name}"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial.rename(target)
    return f"{target}: unpacked {len(members)} files from {wheel.name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="example: "
                                     "python tools/fetch_wheels.py sglang==0.5.23 vllm==0.7.3")
    parser.add_argument("requirements", nargs="*", type=_requirement, help="NAME==VERSION")
    parser.add_argument("--for", dest="paths", action="append", default=[], metavar="PATH",
                        help="the release whose unpacked folder holds PATH (a skip reason's path)")
    parser.add_argument("--from-skips", type=Path, metavar="LOG",
                        help="every release a pytest output's skip reasons name (run pytest with -rs)")
    parser.add_argument("--wheels", type=Path, default=WHEELS, help=f"where they unpack (default {WHEELS})")
    parser.add_argument("--find-links", type=Path, help="take wheels from this folder only, no index")
    parser.add_argument("--dry-run", action="store_true", help="say what would be fetched; fetch nothing")
    args = parser.parse_args(argv)
    wanted: dict[tuple[str, str], set[str]] = {release: set() for release in args.requirements}
    others: list[str] = []
    for path in args.paths:
        found = _split(Path(path).absolute(), args.wheels)
        if found is None:
            parser.error(f"--for {path}: not inside a release's folder under {args.wheels}")
        wanted.setdefault(found[0], set()).update([found[1]] if BINARY.search(found[1]) else [])
    if args.from_skips:
        try:
            releases, others = from_skips(args.from_skips.read_text(errors="replace"))
        except OSError as err:
            parser.error(f"--from-skips {args.from_skips}: {err.strerror}")
        for release, libraries in releases.items():
            wanted.setdefault(release, set()).update(libraries)
    if not wanted and not others:
        parser.error("nothing to fetch: name releases (sglang==0.5.23), --for PATH or --from-skips LOG")
    for other in others:
        print(f"{args.wheels / other}: named by a commit, not a release: fetch its source by hand")
    failed = 0
    for (name, version), libraries in wanted.items():
        if args.dry_run:
            extra = f" with {', '.join(sorted(libraries))}" if libraries else ""
            print(f"{folder(name, version, args.wheels)}: would fetch {name}=={version}{extra}")
            continue
        try:
            print(fetch(name, version, args.wheels, args.find_links, libraries), flush=True)
        except (FileNotFoundError, RuntimeError) as err:
            print(f"error: {err}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
