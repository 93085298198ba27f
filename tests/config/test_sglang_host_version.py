"""Which SGLang release a deploy checks a command against (issue 11, "version-aware validation").

The config's ``sglang.version`` wins, then the host profile's ``sglang_version``; else
``Lab.check_variants`` asks the host once (``installed_sglang``: the unit's own python, one
command, remembered per host and interpreter) and checks with the nearest committed table. A
removed flag is then a ConfigError naming its replacement, raised before anything else runs
on the host. The transport here is a stand-in that only answers the version question.
"""

from __future__ import annotations

import pytest

from ddlab.config.variants import make_variant
from ddlab.core.errors import ConfigError
from ddlab.hosts.profiles import HostProfile
from ddlab.hosts.transport import Completed
from ddlab.lab import commands
from ddlab.lab.commands import installed_sglang
from ddlab.lab.deploy import Lab

SGLANG_PYTHON = "/opt/sglang/.venv/bin/python"  # params/base/dflash.yaml's interpreter


class VersionHost:
    """A transport whose host answers the version probe and records every command."""

    def __init__(self, profile: HostProfile, stdout: str = "0.5.18\n", exit_code: int = 0,
                 stderr: str = ""):
        self.profile, self.stdout, self.exit_code, self.stderr = profile, stdout, exit_code, stderr
        self.calls: list[list[str]] = []

    def run(self, argv, check=False, timeout_s=None):
        self.calls.append(list(argv))
        return Completed(list(argv), self.exit_code, self.stdout, self.stderr, 0.0)


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.setattr(commands, "_ASKED", {})


def _lab(stdout="0.5.18\n", exit_code=0, stderr="", **profile) -> tuple[Lab, VersionHost]:
    lab = Lab(HostProfile(name=profile.pop("name", "gpu-a"), transport="ssh",
                          hostname=profile.pop("hostname", "gpu-a.example"), **profile))
    lab.transport = VersionHost(lab.profile, stdout, exit_code, stderr)
    return lab, lab.transport


def test_deploy_asks_the_units_python_once_and_checks_with_that_release():
    lab, host = _lab("0.5.18\n")
    variant = make_variant("dflash", ["cuda_graph_max_bs=16"])  # deprecated in 0.5.18, not removed
    lab.check_variants([variant])
    lab.check_variants([variant, make_variant("dflash", ["mem_fraction_static=0.8"])])
    assert len(host.calls) == 1, host.calls  # one round trip, remembered for this host
    python, flag, code = host.calls[0]
    assert (python, flag) == (SGLANG_PYTHON, "-c") and "sglang" in code
    assert lab.sglang_versions[variant.name] == "0.5.18"


def test_a_removed_flag_stops_the_deploy_naming_its_replacement_before_anything_runs():
    lab, host = _lab("0.5.23\n")
    with pytest.raises(ConfigError) as info:
        lab.check_variants([make_variant("dflash", ["cuda_graph_max_bs=16"])])
    said = str(info.value)
    assert "SGLang 0.5.23 would refuse its command" in said
    assert "--cuda-graph-max-bs: removed in SGLang 0.5.20" in said
    assert "use --cuda-graph-max-bs-decode" in said
    assert len(host.calls) == 1  # the version question, and nothing else


def test_the_profiles_version_is_used_without_asking():
    lab, host = _lab(sglang_version="0.5.18")
    lab.check_variants([make_variant("dflash", ["cuda_graph_max_bs=16"])])
    assert host.calls == []
    lab, host = _lab(sglang_version="0.5.20")
    with pytest.raises(ConfigError, match="removed in SGLang 0.5.20"):
        lab.check_variants([make_variant("dflash", ["cuda_graph_max_bs=16"])])
    assert host.calls == []


def test_the_configs_own_version_wins_over_profile_and_host():
    lab, host = _lab("0.5.23\n", sglang_version="0.5.23")
    variant = make_variant("dflash", ["cuda_graph_max_bs=16", "sglang.version=0.5.18"])
    lab.check_variants([variant])
    assert host.calls == [] and lab.sglang_versions[variant.name] == "0.5.18"


def test_a_host_that_cannot_say_gets_the_newest_table(caplog):
    lab, host = _lab("", exit_code=1, stderr="ModuleNotFoundError: No module named 'sglang'\n")
    with pytest.raises(ConfigError, match="SGLang 0.5.23 would refuse"):
        lab.check_variants([make_variant("dflash", ["cuda_graph_max_bs=16"])])
    assert len(host.calls) == 1
    assert "could not read the SGLang version" in caplog.text
    assert "No module named 'sglang'" in caplog.text


def test_the_answer_is_remembered_per_host_and_interpreter():
    profile_a = HostProfile(name="a", transport="ssh", hostname="a.example")
    profile_b = HostProfile(name="b", transport="ssh", hostname="b.example")
    host_a, host_b = VersionHost(profile_a, "0.5.20\n"), VersionHost(profile_b, "0.5.10\n")
    assert installed_sglang(host_a, SGLANG_PYTHON) == "0.5.20"
    assert installed_sglang(host_a, SGLANG_PYTHON) == "0.5.20"
    assert installed_sglang(host_b, SGLANG_PYTHON) == "0.5.10"
    assert installed_sglang(host_a, "/usr/bin/python3") == "0.5.20"
    assert [len(host_a.calls), len(host_b.calls)] == [2, 1]  # a, then a's other python; b once


def test_the_embedded_target_is_never_asked_for_an_sglang_version():
    lab, host = _lab()
    lab.check_variants([make_variant("local", ["budget=8"])])
    assert host.calls == []


# --- the probe itself, run by a real python against sglang laid out as hosts have it -----
#
# Installed (a dist-info: importlib.metadata answers, nothing is imported), or a source
# checkout on PYTHONPATH (no metadata: the package's own version file is read without
# importing it; only when it has no literal version is sglang imported). Each layout's
# sglang/__init__.py says on stdout when it is imported and, where the probe must not
# import it, raises.

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

MUST_NOT_IMPORT = "raise RuntimeError('import sglang: the probe must not import the package')\n"
VERSION_PY_0_5 = textwrap.dedent('''\
    try:
        from sglang._version import __version__, __version_tuple__
    except ImportError:
        try:
            import importlib.metadata

            __version__ = importlib.metadata.version("sglang")
            __version_tuple__ = tuple(__version__.split("."))
        except Exception:
            __version__ = "0.0.0.dev0"
            __version_tuple__ = (0, 0, 0, "dev0")
    ''')  # 0.5.23 sglang/version.py, setuptools_scm branch left out
VERSION_PY_0_4 = '__version__ = "0.4.10.post2"\n'  # 0.4.10.post2 sglang/version.py
GENERATED_0_5_23 = textwrap.dedent('''\
    from __future__ import annotations
    __version__: str
    __version__ = version = '0.5.23'
    __version_tuple__ = version_tuple = (0, 5, 23)
    ''')  # 0.5.23 sglang/_version.py (written by the build; untracked in a checkout)


class LocalPython:
    """A transport whose host's interpreter is this one, with ``pythonpath`` on its path."""

    def __init__(self, profile: HostProfile, pythonpath, cwd):
        self.profile, self.pythonpath, self.cwd = profile, str(pythonpath), cwd
        self.calls: list[list[str]] = []

    def run(self, argv, check=False, timeout_s=None):
        self.calls.append(list(argv))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True,
                              env={**env, "PYTHONPATH": self.pythonpath}, cwd=self.cwd,
                              timeout=timeout_s)
        return Completed(list(argv), done.returncode, done.stdout, done.stderr, 0.0)


def _layout(root, files: dict[str, str]):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _ask(tmp_path, files: dict[str, str]) -> tuple[str | None, LocalPython]:
    site, cwd = _layout(tmp_path / "site", files), tmp_path / "cwd"
    cwd.mkdir()
    host = LocalPython(HostProfile(name="gpu-a", transport="ssh", hostname="gpu-a.example"),
                       site, cwd)
    return installed_sglang(host, SGLANG_PYTHON), host


def test_probe_an_installed_release_is_read_from_its_metadata_without_importing(tmp_path):
    version, host = _ask(tmp_path, {
        "sglang-0.5.20.dist-info/METADATA": "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.20\n",
        "sglang/__init__.py": MUST_NOT_IMPORT, "sglang/version.py": VERSION_PY_0_5})
    assert version == "0.5.20" and len(host.calls) == 1


def test_probe_a_source_checkout_with_a_built_version_file_is_read_without_importing(tmp_path):
    version, _ = _ask(tmp_path, {"sglang/__init__.py": MUST_NOT_IMPORT,
                                 "sglang/version.py": VERSION_PY_0_5,
                                 "sglang/_version.py": GENERATED_0_5_23})
    assert version == "0.5.23"


def test_probe_an_old_source_checkout_is_read_from_version_py_without_importing(tmp_path):
    version, _ = _ask(tmp_path, {"sglang/__init__.py": MUST_NOT_IMPORT,
                                 "sglang/version.py": VERSION_PY_0_4})
    assert version == "0.4.10.post2"


def test_probe_a_checkout_without_a_literal_version_imports_sglang_once(tmp_path):
    """Last resort: ``import sglang; sglang.__version__`` (what the package prints while
    importing does not become the answer)."""
    version, host = _ask(tmp_path, {
        "sglang/__init__.py": "print('INFO: patching transformers')\n"
                              "__version__ = '.'.join(['0', '5', '24'])\n"})
    assert version == "0.5.24" and len(host.calls) == 1


def test_probe_a_checkout_with_only_a_placeholder_version_cannot_say(tmp_path, caplog):
    """No metadata and no _version.py: 0.5.x's version.py falls back to 0.0.0.dev0, which
    would pick the oldest table; it is no version, and the newest table is used."""
    version, _ = _ask(tmp_path, {"sglang/__init__.py": "from sglang.version import __version__\n",
                                 "sglang/version.py": VERSION_PY_0_5})
    assert version is None
    assert "has no version (0.0.0.dev0)" in caplog.text and "sglang_version" in caplog.text


def test_probe_no_sglang_at_all_cannot_say(tmp_path, caplog):
    version, _ = _ask(tmp_path, {"other/__init__.py": ""})
    assert version is None
    assert "No module named 'sglang'" in caplog.text


def test_deploy_checks_a_source_checkout_with_its_own_release(tmp_path):
    """End to end: the checkout says 0.5.18, where --cuda-graph-max-bs is a deprecated
    alias (the newest table, used when the host cannot say, refuses it as removed)."""
    site = _layout(tmp_path / "site", {"sglang/__init__.py": MUST_NOT_IMPORT,
                                       "sglang/_version.py": GENERATED_0_5_23.replace(
                                           "0.5.23", "0.5.18").replace("23)", "18)")})
    (tmp_path / "cwd").mkdir()
    lab = Lab(HostProfile(name="gpu-a", transport="ssh", hostname="gpu-a.example"))
    lab.transport = LocalPython(lab.profile, site, tmp_path / "cwd")
    variant = make_variant("dflash", ["cuda_graph_max_bs=16"])
    lab.check_variants([variant])
    assert lab.sglang_versions[variant.name] == "0.5.18" and len(lab.transport.calls) == 1


def test_a_checkout_only_the_unit_puts_on_the_path_is_the_one_asked(tmp_path):
    """The unit's own ``env: {PYTHONPATH: ...}`` (a fork run from its source tree) is on
    the path when the host is asked, through the real local transport: the version is the
    checkout's, not "no sglang here"."""
    import sys

    from ddlab.hosts import connect
    from ddlab.hosts.profiles import load_host

    site = _layout(tmp_path / "checkout", {"sglang/__init__.py": MUST_NOT_IMPORT,
                                           "sglang/_version.py": GENERATED_0_5_23})
    with connect(load_host("local")) as transport:
        assert installed_sglang(transport, sys.executable, str(site)) == "0.5.23"
        assert installed_sglang(transport, sys.executable, str(tmp_path / "empty")) is None


# --- ddlab unit --host and deploy --dry-run ask the host as deploy does (issue 25, item 3) --
#
# On the real test host (tests/testhost: systemd + sshd on loopback), over SSH. Its python
# is this one; a source checkout that says 0.5.18 sits where the host sees it, on the
# unit's own PYTHONPATH. On 0.5.18 --cuda-graph-max-bs is a deprecated alias (a warning);
# on the newest table, used when the host is not asked, it is removed (an error).


@pytest.fixture
def host_0_5_18(testhost, tmp_path):
    import secrets

    import yaml

    checkout = testhost.shared_dir / f"sglang-0.5.18-{secrets.token_hex(4)}"
    _layout(checkout, {"sglang/__init__.py": MUST_NOT_IMPORT,
                       "sglang/_version.py": GENERATED_0_5_23.replace("0.5.23", "0.5.18")})
    profile = tmp_path / "th.yaml"
    profile.write_text(yaml.safe_dump(testhost.profile()))
    return profile, [f"python={sys.executable}", f"env.PYTHONPATH={checkout}",
                     "cuda_graph_max_bs=16"]


def test_unit_with_a_host_asks_it_for_its_sglang_version(host_0_5_18):
    from labkit import ddlab

    profile, overrides = host_0_5_18
    done = ddlab("unit", "--base", "dflash", *[w for o in overrides for w in ("--set", o)],
                 "--host", str(profile))
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[:2]
    assert head[0] == f"# flags checked against SGLang 0.5.18 ({sys.executable} on th says so)"
    assert head[1].startswith("# warning: --cuda-graph-max-bs: deprecated in SGLang 0.5.18")


def test_deploy_dry_run_asks_the_host_and_changes_nothing(host_0_5_18, testhost):
    import ddlab as api

    profile, overrides = host_0_5_18
    answer = api.deploy(api.plan_deploy(str(profile), "dflash", overrides), dry_run=True)
    text = answer.render()
    assert f"flags checked against SGLang 0.5.18 ({sys.executable} on th says so)" in text
    assert "DRY RUN: nothing deployed on th" in text
    listed = testhost.run(["systemctl", "list-units", "--all", "--no-legend", "ddlab-*"]).stdout
    assert "ddlab-dflash" not in listed


def test_unit_says_when_the_host_cannot_say(host_0_5_18, testhost):
    from labkit import ddlab

    profile, overrides = host_0_5_18
    empty = testhost.shared_dir / "no-sglang-here"
    empty.mkdir(exist_ok=True)
    done = ddlab("unit", "--base", "dflash", "--set", f"python={sys.executable}",
                 "--set", f"env.PYTHONPATH={empty}", "--host", str(profile))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        f"# flags checked against SGLang 0.5.23 (the newest with a table: could not read the "
        f"SGLang version of {sys.executable} on th: exit 1: ModuleNotFoundError: No module "
        "named 'sglang')")


def test_unit_says_when_the_host_cannot_be_reached(host_0_5_18, tmp_path):
    import yaml
    from labkit import ddlab
    from testhost.ports import free_port

    profile, overrides = host_0_5_18
    gone = tmp_path / "gone.yaml"
    gone.write_text(yaml.safe_dump({**yaml.safe_load(profile.read_text()), "port": free_port(),
                                    "connect_timeout_s": 3}))
    done = ddlab("unit", "--base", "dflash", *[w for o in overrides[:2] for w in ("--set", o)],
                 "--host", str(gone))
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("# flags checked against SGLang 0.5.23 (the newest with a table: "
                            "could not reach gone to ask its SGLang version: "), first
