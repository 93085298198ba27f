"""Provenance: what a colleague needs to tell one run from another.

A laptop demo and an H200 run print the same kind of table; what tells them
apart is where and with what they ran. :func:`gather` collects it, in the order
a report shows it: ddlab's version and git commit (``+dirty`` when the checkout
has changes), the host profile and the machines (this one's hostname; the
host's, for SSH), the device and GPU name, the server (ddlab's embedded target,
with the release whose dialect it speaks for a vLLM base; else the base family's
server, SGLang or vLLM, with the version the family's version probe reads on the
host, or the one the profile or the base names), the model (the base config's
model flag), torch and Python, the command that reproduces the run, and
the load average (this machine's at the start of a run, else the host's at
its end).

The host's facts come from one short command run with the host's own Python
through its transport (torch's version from metadata, the server's from the base
family's ``version_probe`` run by that Python, GPU names from ``nvidia-smi``: no CUDA
context is made next to a server starting on that GPU);
``probe_host=False``, or any failure, leaves them "unknown". A run keeps what
:func:`gather` returns as ``provenance.json`` (and in ``run.json``).
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

from ddlab.core import yamlio
from ddlab.core.kernel import in_kernel, launcher, papermill_args, parent_argv
from ddlab.core.paths import outputs_dir
from ddlab.core.redact import redact
from ddlab.core.run_folders import write_json
from ddlab.core.version import __version__
from ddlab.target.vllm_lines import VERSION as VLLM_DIALECT

__all__ = ["gather", "stored", "sweep_provenance", "notebook_run_provenance", "run_command",
           "command_line", "load_average", "PROVENANCE_FILE"]

PROVENANCE_FILE = "provenance.json"
UNKNOWN = "unknown"
_CHECKOUT = Path(__file__).resolve().parents[3]  # lib/ddlab/report -> the checkout

# Run with the host's Python: one JSON line of what it has.
_HOST_FACTS = """
import importlib.metadata as m, json, os, platform, shutil, subprocess, sys
out = {"python": platform.python_version(), "load": os.getloadavg(), "cpus": os.cpu_count()}
try:
    out["torch"] = m.version("torch")
except Exception:
    pass
try:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=20)
    if done.returncode == 0 and done.stdout.split():
        out["server"] = done.stdout.split()[-1]
except Exception:
    pass
smi = shutil.which("nvidia-smi")
if smi:
    try:
        done = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10)
        out["gpus"] = [g.strip() for g in done.stdout.splitlines() if g.strip()]
    except Exception:
        pass
print(json.dumps(out))
"""


def gather(host=None, *, base: str | None = None, command: str = "",
           probe_host: bool = True, load_at_start: str = "") -> dict:
    """What, where and with what a run ran (see the module docstring); ``host`` a
    profile or its name (default ``local``), ``base`` the base config (default the
    host's), ``command`` the command line that reproduces it."""
    from ddlab.hosts.profiles import HostProfile, load_host

    try:
        profile = host if isinstance(host, HostProfile) else load_host(host or "local")
    except Exception as err:  # noqa: BLE001 - provenance never fails a run
        profile, host_error = None, f"{type(err).__name__}: {err}"
    else:
        host_error = ""
    config = _base_config(profile, base)
    facts = _host_facts(profile, config) if profile is not None and probe_host else {}
    local = profile is not None and profile.transport == "local"
    return {
        "ddlab": __version__,
        "commit": _commit(),
        "host": profile.label if profile is not None else f"{host} ({host_error})",
        "machine": socket.gethostname() + ("" if local or profile is None else
                                           f" (controller); the host is {profile.hostname}"),
        "device": _device(facts, local),
        "gpu": ", ".join(facts.get("gpus") or []) or (UNKNOWN if not facts else "none"),
        "server": _server(profile, config, facts),
        "model": _model(config),
        "torch": facts.get("torch", UNKNOWN),
        "python": facts.get("python", UNKNOWN),
        "command": command or command_line(),
        "load average": f"{load_at_start} at the start" if load_at_start else
                        _load(facts.get("load"), facts.get("cpus"), " at the end"),
    }


def stored(folder) -> dict:
    """The provenance a run or sweep folder keeps ({} when none)."""
    try:
        return json.loads((Path(folder) / PROVENANCE_FILE).read_text())
    except (OSError, ValueError, TypeError):
        return {}


def sweep_provenance(sweep_id: str, run_dir=None) -> dict:
    """What a sweep kept of its provenance (``outputs/sweeps/<id>/``), copied into
    ``run_dir`` when given (a plot's run folder reports the sweep it shows)."""
    found = stored(outputs_dir() / "sweeps" / sweep_id)
    if found and run_dir and Path(run_dir).is_dir():
        write_json(Path(run_dir) / PROVENANCE_FILE, found)
    return found


def run_command(notebook: str, params: dict, name: str | None = None) -> str:
    """The ``ddlab run`` command line that reproduces this run (secrets masked)."""
    words = ["ddlab", "run", notebook]
    for key, value in redact(params).items():
        words += ["-p", key, _yaml_word(value)]
    return shlex.join(words + (["--name", name] if name else []))


def _yaml_word(value) -> str:
    """``value`` as ``-p`` reads it back: plain text when YAML keeps it a string."""
    if isinstance(value, str) and value:
        try:
            if yamlio.load(value) == value:
                return value
        except ValueError:
            pass
    return json.dumps(value)


def notebook_run_provenance(run_dir: Path, record: dict, verdict: dict, status: str) -> dict:
    """The run's provenance: what the notebook's library calls kept in the folder (a
    sweep's, gathered where it ran; the plotted sweep's), else gathered here, with
    this run's command. A sweep run here gets the command into its own record too."""
    kept = stored(run_dir)
    provenance = kept or gather(record.get("host"), base=record.get("base"),
                                probe_host=status == "ok", command=record["command"])
    earlier, provenance["command"] = provenance.get("command"), record["command"]
    if earlier and earlier != record["command"]:
        provenance["sweep command"] = earlier  # the plotted sweep's
    provenance["load average"] = f"{record['load_at_start']} at the start"
    write_json(run_dir / PROVENANCE_FILE, provenance)
    sweep_folder = outputs_dir() / "sweeps" / str(verdict.get("sweep_id") or "-")
    if kept and not earlier and (sweep_folder / PROVENANCE_FILE).is_file():
        write_json(sweep_folder / PROVENANCE_FILE, provenance)
    return provenance


def command_line() -> str:
    """The command that started this: the papermill command (a kernel papermill runs),
    the ``ddlab`` verb, else the script's argv; "" in a kernel someone else runs
    (``ddlab run`` writes its own command)."""
    if launcher() == "papermill":
        return shlex.join(["papermill", *papermill_args(parent_argv())])
    if launcher() == "jupyter":
        return f"JupyterLab: {os.environ.get('JPY_SESSION_NAME') or 'a notebook'}"
    if in_kernel():
        return ""
    argv = list(sys.argv)
    if argv and os.path.basename(argv[0]) == "ddlab":
        return shlex.join(["ddlab", *argv[1:]])
    return shlex.join([os.path.basename(sys.executable), *argv]) if argv else ""


def load_average() -> str:
    """This machine's 1, 5 and 15 minute load average and its core count."""
    return _load(os.getloadavg(), os.cpu_count())


def _load(load, cpus, when: str = "") -> str:
    if not load:
        return UNKNOWN
    return f"{' '.join(f'{x:.2f}' for x in load)} ({cpus} cores){when}"


def _commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(_CHECKOUT), *args], capture_output=True,
                              text=True, timeout=10)
        return done.stdout.strip() if done.returncode == 0 else ""

    try:
        head = git("rev-parse", "--short=12", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no")) if head else False
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return f"{head}{'+dirty' if dirty else ''}" if head else "unknown (not a git checkout)"


def _host_facts(profile, config) -> dict:
    from ddlab.config.families import FAMILIES
    from ddlab.hosts import connect

    family = config.family if config is not None else FAMILIES["sglang"]
    script = f"PROBE = {family.version_probe!r}\n{_HOST_FACTS}"
    try:
        transport = connect(profile)
        try:
            done = transport.run([profile.python, "-c", script], timeout_s=30, check=False)
        finally:
            transport.close()
        return json.loads(done.stdout.strip().splitlines()[-1]) if done.exit_code == 0 else {}
    except Exception:  # noqa: BLE001 - an unreachable host leaves "unknown", not a failed run
        return {}


def _device(facts: dict, local: bool) -> str:
    if not facts:
        return UNKNOWN
    gpus = facts.get("gpus") or []
    if local and (not gpus or str(facts.get("torch", "")).endswith("+cpu")):
        return "cpu"  # the embedded target runs where torch can: no GPU, or a CPU build
    return f"cuda ({len(gpus)} GPU{'s' if len(gpus) != 1 else ''})" if gpus else "cpu"


def _base_config(profile, base: str | None):
    """The base as the host runs it (a vLLM base on ``local``: the embedded target)."""
    from ddlab.config.bases import load_base
    from ddlab.config.variants import make_variant
    from ddlab.lab.plans import as_host_runs

    try:
        config = load_base(base or (profile.base if profile is not None else "") or "local")
        return config if profile is None else as_host_runs(make_variant(config), profile).config
    except Exception:  # noqa: BLE001 - a run that failed on its base still gets a report
        return None


def _server(profile, config, facts: dict) -> str:
    family = config.family.name if config is not None else "sglang"
    if config is not None and config.module.startswith("ddlab.target"):
        said = f", reporting vLLM {VLLM_DIALECT}" if family == "vllm" else ""
        return f"ddlab.target {__version__} (ddlab's embedded server, {config.family.label}'s API{said})"
    named, by = ((profile.sglang_version if profile is not None else "", "the host profile")
                 if family == "sglang" else (config.release.get("version") or "", "the base"))
    version = facts.get("server") or named
    source = "installed on the host" if facts.get("server") else f"named by {by}"
    label = "SGLang" if family == "sglang" else config.family.label
    return f"{label} {version} ({source})" if version else f"{label} (version unknown)"


def _model(config) -> str:
    if config is None:
        return UNKNOWN
    family = config.family  # the flags that name the models, in the family's words
    flat = family.flat_flags(config.flags)
    model = flat.get(family.model_flag) or UNKNOWN
    draft = flat.get(family.draft_flag)
    return f"{model} (draft {draft}; base {config.base})" if draft else f"{model} (base {config.base})"
