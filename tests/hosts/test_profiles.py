"""Host profiles, and the local and SSH transports against the real test host."""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
import warnings
import re
from pathlib import Path

import httpx
import paramiko
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlab.core.errors import CommandError, ConfigError, HostError, HostKeyError
from ddlab.hosts import connect
from ddlab.hosts.profiles import HostProfile, available_hosts, load_host
from ddlab.hosts.ssh import SSHTransport
from ddlab.hosts.ssh_trust import (
    check_identity_file,
    check_identity_files,
    load_ssh_config,
    resolve_hops,
)
from ddlab.hosts.transport import LocalTransport
from ddlab.lab import http_client
from testhost.ports import free_port

# --- profiles ---------------------------------------------------------------------


def test_local_is_built_in_and_the_default():
    profile = load_host()
    assert (profile.name, profile.transport, profile.service_manager) == ("local", "local", "process")
    assert profile.python == sys.executable and Path(profile.workdir, "lib", "ddlab").is_dir()
    assert profile.state_dir == "~/.cache/ddlab" and profile.http == "direct"
    assert isinstance(connect(), LocalTransport)


def test_example_profile_loads_with_ssh_defaults():
    profile = load_host("example-gpu")
    assert (profile.transport, profile.service_manager, profile.http) == ("ssh", "systemd", "tunnel")
    assert profile.trust_on_first_use is False and profile.port == 22
    assert "example-gpu" in available_hosts()


def test_overrides_are_validated_like_keys():
    assert load_host("local", state_dir="/srv/x").state_dir == "/srv/x"
    with pytest.raises(ConfigError, match="command_timeout_s"):
        load_host("local", command_timeout_s=-1)


@pytest.mark.parametrize("data, words", [
    ({"transport": "ssh", "hostname": "h", "hostnme": "x"}, ["hostnme", "did you mean 'hostname'"]),
    ({"transport": "telnet"}, ["transport='telnet'", "local or ssh"]),
    ({"transport": "ssh", "hostname": "h", "port": "22"}, ["port='22'", "an integer"]),
    ({"transport": "ssh", "hostname": "h", "port": True}, ["port=True", "an integer"]),
    ({"transport": "ssh", "hostname": "h", "port": 70000}, ["port=70000", "1-65535"]),
    ({"trust_on_first_use": "yes"}, ["trust_on_first_use='yes'", "true or false"]),
    ({"connect_timeout_s": 0}, ["connect_timeout_s=0", "> 0"]),
    ({"http": "proxy"}, ["http='proxy'", "tunnel or direct"]),
    ({"service_manager": "docker"}, ["service_manager='docker'", "systemd or process"]),
    ({"transport": "ssh"}, ["hostname is required"]),
    (["transport", "ssh"], ["must be a mapping"]),
], ids=["unknown-key", "transport", "port-str", "port-bool", "port-range", "tofu-str",
        "timeout-zero", "http", "manager", "ssh-no-hostname", "not-a-mapping"])
def test_bad_profiles_name_value_and_allowed(data, words):
    with pytest.raises(ConfigError) as info:
        HostProfile.from_dict(data, name="bad")
    for word in words:
        assert word in str(info.value)
    assert info.value.fix


@pytest.fixture
def gpu_a(project):
    """The test project (tests/conftest.py) with one SSH profile, gpu-a."""
    (project.root / "params" / "hosts" / "gpu-a.yaml").write_text("transport: ssh\nhostname: a\n")
    return project


def test_unknown_host_lists_profiles_and_suggests(gpu_a):
    with pytest.raises(ConfigError) as info:
        load_host("gpu-b")
    text = str(info.value)
    assert "host='gpu-b'" in text and "gpu-a, local" in text and "did you mean 'gpu-a'" in text
    assert info.value.available == ["gpu-a", "local"]


@pytest.mark.parametrize("name", ["../etc/passwd", "a/b", "", ".hidden"], ids=["dotdot", "slash", "empty", "dot"])
def test_host_names_cannot_be_paths(gpu_a, name):
    with pytest.raises(ConfigError, match="must be a profile name"):
        load_host(name)


def test_malformed_yaml_is_one_clear_error(gpu_a):
    (gpu_a.root / "params" / "hosts" / "broken.yaml").write_text("transport: [ssh\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_host("broken")


def test_ssh_config_resolves_alias_identity_and_jump_chain(tmp_path):
    config = tmp_path / "ssh_config"
    key = tmp_path / "gpu_key"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n-----END OPENSSH PRIVATE KEY-----\n")
    config.write_text("Host gpu\n  HostName 10.1.2.3\n  User ubuntu\n  Port 2200\n"
                      f"  IdentityFile {key}\n  IdentityFile ~/.ssh/no_such_key_here\n"
                      "  ProxyJump bastion\n"
                      "Host bastion\n  HostName 192.0.2.7\n  User jump\n  ProxyJump edge\n")
    profile = HostProfile.from_dict({"transport": "ssh", "hostname": "gpu",
                                     "ssh_config": str(config)})
    hops = resolve_hops(profile, load_ssh_config(str(config)))
    assert [str(h) for h in hops] == ["%s@edge:22" % hops[0].user, "jump@192.0.2.7:22",
                                      "ubuntu@10.1.2.3:2200"]
    # a configured key file that does not exist is left out, as ssh does
    assert hops[-1].identity_files == (str(key),)
    explicit = HostProfile.from_dict({"transport": "ssh", "hostname": "gpu", "user": "root",
                                      "port": 22, "proxy_jump": "admin@[2001:db8::1]:2222,b2"})
    hops = resolve_hops(explicit, load_ssh_config(str(config)))
    assert [str(h) for h in hops][:2] == ["admin@2001:db8::1:2222", f"{hops[1].user}@b2:22"]
    assert str(hops[-1]) == "root@10.1.2.3:22"
    none = HostProfile.from_dict({"transport": "ssh", "hostname": "gpu", "proxy_jump": "none"})
    assert len(resolve_hops(none, load_ssh_config(str(config)))) == 1


# --- transports: the same contract, local and over SSH -----------------------------

KINDS = ["local", pytest.param("ssh", marks=pytest.mark.testhost),
         pytest.param("ssh-exec", marks=pytest.mark.testhost)]


@pytest.fixture(scope="module", params=KINDS)
def transport(request):
    if request.param == "local":
        transport = connect("local")
    else:
        testhost = request.getfixturevalue("testhost")
        profile = HostProfile.from_dict(testhost.profile(), name="testhost")
        transport = SSHTransport(profile, agent=request.param == "ssh")
    yield transport
    transport.close()


@pytest.fixture
def scratch(transport, request, tmp_path):
    """A dir the transport's commands see, at the same path on this machine."""
    if isinstance(transport, LocalTransport):
        return tmp_path
    path = request.getfixturevalue("testhost").shared_dir / f"scratch-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    return path


HOSTILE = ["a; touch CANARY", "$(touch CANARY)", "`touch CANARY`", "' \" '\"'", "\\", "\\'",
           "%s %n %% %(x)s", "&& touch CANARY", "| touch CANARY", "> CANARY", "<CANARY",
           "ünïcødé ✓ 漢字 🚀", "", " lead and trail ", "new\nline", "tab\tx", "-rf", "--x=$(id)",
           "$HOME", "${IFS}", "*", "~", "!!", "#comment", "x" * 10_000]


def _echo_argv(args):
    return [sys.executable, "-c", "import json,sys; print(json.dumps(sys.argv[1:]))", *args]


def test_hostile_arguments_arrive_byte_for_byte_and_never_run(transport, scratch):
    canary = scratch / "CANARY"
    args = [arg.replace("CANARY", str(canary)) for arg in HOSTILE]
    done = transport.run(_echo_argv(args))
    assert json.loads(done.stdout) == args
    assert not canary.exists(), "a shell ran part of an argument"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                             max_size=40), max_size=6))
@pytest.mark.slow
def test_any_text_argument_round_trips(transport, args):
    assert json.loads(transport.run(_echo_argv(args)).stdout) == args


def test_exit_status_output_and_stdin(transport):
    done = transport.run(["sh", "-c", "cat; echo oops >&2; exit 3"], input="fed\n", check=False)
    assert (done.exit_code, done.stdout, done.stderr) == (3, "fed\n", "oops\n")
    assert not done.ok and done.elapsed_s >= 0
    with pytest.raises(CommandError) as info:
        transport.run(["sh", "-c", "echo the-tail >&2; exit 4"])
    err = info.value
    assert err.command_exit == 4 and err.argv[0] == "sh" and "exited 4" in str(err)
    assert err.exit_code == 1, "ddlab's own exit code, never the remote command's"
    assert "the-tail" in str(err) and not err.timed_out
    assert transport.run(["no-such-command-ddlab"], check=False).exit_code == 127


def test_secrets_in_argv_are_masked_in_errors(transport):
    with pytest.raises(CommandError) as info:
        transport.run(["env", "HF_TOKEN=hf_sup3rs3cret", "false"])
    assert "hf_sup3rs3cret" not in str(info.value) and "hf_sup3rs3cret" not in str(info.value.argv)


@pytest.mark.slow
def test_a_hung_command_is_killed_at_its_timeout(transport, scratch):
    pidfile = scratch / "hung.pid"
    start = time.monotonic()
    with pytest.raises(CommandError) as info:
        transport.run(["sh", "-c", f"sleep 60 & echo $$ $! > {pidfile}; wait"], timeout_s=1)
    assert info.value.timed_out and "still running after 1 s" in str(info.value)
    assert time.monotonic() - start < 6
    for pid in pidfile.read_text().split():  # the shell and its child
        assert not _alive(transport, pid), "outlived its timeout"


def test_ctrl_c_mid_command_on_this_machine_leaves_no_zombie_and_no_open_pipe(tmp_path):
    """A Ctrl-C (here: SIGINT to this process) while a local command runs: the command is
    killed, its exit status collected and its pipes closed before the interrupt goes on;
    before, it stayed a zombie with two open pipes until the garbage collector warned
    ("subprocess N is still running", a failed test under -W error) in a later test."""
    pidfile = tmp_path / "cmd.pid"
    transport = connect("local")
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt):
            timer.start()
            transport.run(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 30"], timeout_s=20)
        pid = int(pidfile.read_text())
        state = Path(f"/proc/{pid}/stat")
        assert not state.exists(), f"left as {state.read_text().split()[2]} (Z: a zombie)"
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, leaks


def test_ctrl_c_inside_popen_after_the_fork_leaves_no_child_and_no_warning(monkeypatch):
    """A Ctrl-C that lands inside subprocess.Popen's constructor after the child is forked
    (CPython 3.11.7 Lib/subprocess.py:1026-1044: the exception leaves __init__ with the pipes
    closed and the child never waited, the object unreachable): the command is killed and
    reaped before the interrupt goes on. Before, the child ran on unreaped and the garbage
    collector warned "subprocess N is still running" in whichever later test it ran
    (CI, stop 65: tests/sweeps/test_pool.py failed on a `sh -c` log read's Popen, the watch
    test that sends SIGINT from a thread at a random instant being one way there). Here the
    SIGINT is real, sent the moment the fork returns."""
    real = subprocess.Popen._execute_child
    argv, spawned = ["sleep", "30"], []

    def fork_then_ctrl_c(self, args, *rest, **kwargs):
        real(self, args, *rest, **kwargs)
        if args == argv and threading.current_thread() is threading.main_thread():  # only this test's
            spawned.append(self.pid)
            os.kill(os.getpid(), signal.SIGINT)  # raised at the constructor's next check

    monkeypatch.setattr(subprocess.Popen, "_execute_child", fork_then_ctrl_c)
    transport = connect("local")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt):
            transport.run(argv, timeout_s=20)
        monkeypatch.undo()
        assert len(spawned) == 1, "the SIGINT landed after the fork"
        state = Path(f"/proc/{spawned[0]}/stat")
        assert not state.exists(), f"left as {state.read_text().split()[2]} (Z: a zombie)"
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, leaks


def test_files_are_written_atomically_with_restrictive_modes(transport, scratch):
    path = scratch / "secret.env"
    transport.write_file(str(path), b"HF_TOKEN=x\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    transport.write_file(str(path), "ünï\0binary".encode(), mode=0o644)
    assert transport.read_file(str(path)) == "ünï\0binary".encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in scratch.iterdir()) == ["secret.env"], "no temp file left"
    with pytest.raises(FileNotFoundError):
        transport.read_file(str(scratch / "missing"))
    with pytest.raises(FileNotFoundError):
        transport.write_file(str(scratch / "no-dir" / "f"), b"x")


def test_tilde_means_the_home_on_the_host(transport):
    home = transport.run(["sh", "-c", 'echo "$HOME"']).stdout.strip()
    assert transport.expand_path("~/x/y") == f"{home}/x/y"
    assert transport.expand_path("/abs/~") == "/abs/~"


def test_http_base_reaches_a_server_on_the_hosts_loopback(transport, scratch):
    (scratch / "hello.txt").write_text("hello through the host\n")
    port = free_port()
    server = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory",
              str(scratch), str(port)]
    unit = f"ddlab-test-http-{port}"
    stop = _start_background(transport, server, unit)
    try:
        base = transport.http_base(port)
        reply = _get_when_up(f"{base}/hello.txt")
        assert reply.text == "hello through the host\n"
        if isinstance(transport, SSHTransport):
            assert base != f"http://127.0.0.1:{port}", "ssh goes through the tunnel"
            assert transport.http_base(port) == base, "one tunnel per port"
    finally:
        stop()


# --- SSH only: keys, connection reuse and loss, config ----------------------------


@pytest.fixture
def profile(testhost, tmp_path):
    def make(**overrides):
        return HostProfile.from_dict(testhost.profile(**overrides), name="testhost")
    return make


def test_one_connection_carries_commands_and_files(profile, testhost):
    with connect(profile()) as ssh:
        for _ in range(5):
            ssh.run(["true"])
        ssh.write_file(str(testhost.shared_dir / "f"), b"x")
        assert ssh.read_file(str(testhost.shared_dir / "f")) == b"x"
        assert ssh.connects == 1
        assert len(testhost.sshd_session_pids()) >= 1


def test_unknown_host_key_is_refused_with_how_to_trust(profile, testhost, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    with pytest.raises(HostKeyError) as info, connect(profile(known_hosts=str(known))) as ssh:
        ssh.run(["touch", str(testhost.shared_dir / "ran")])
    text = str(info.value)
    assert f"ssh-keyscan -p {testhost.ssh_port}" in text and "trust_on_first_use: true" in text
    assert "SHA256:" in text and known.read_text() == ""
    assert not (testhost.shared_dir / "ran").exists()


def test_trust_on_first_use_records_the_key(profile, testhost, tmp_path):
    known = tmp_path / "ssh" / "known_hosts"
    with connect(profile(known_hosts=str(known), trust_on_first_use=True)) as ssh:
        ssh.run(["true"])
    assert known.read_text().split() == [f"[127.0.0.1]:{testhost.ssh_port}",
                                         *testhost.host_key_pub.split()]
    assert stat.S_IMODE(known.stat().st_mode) == 0o600
    with connect(profile(known_hosts=str(known))) as ssh:
        ssh.run(["true"])


def test_a_changed_host_key_is_refused_loudly_even_with_tofu(profile, testhost, tmp_path):
    other = paramiko.Ed25519Key.from_private_key_file(str(testhost.client_key))  # any other key
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{testhost.ssh_port} ssh-ed25519 {other.get_base64()}\n")
    with pytest.raises(HostKeyError) as info, \
            connect(profile(known_hosts=str(known), trust_on_first_use=True)) as ssh:
        ssh.run(["true"])
    assert "HAS CHANGED" in str(info.value) and info.value.changed
    assert "ssh-keygen -R" in str(info.value)
    assert other.get_base64() in known.read_text() and len(known.read_text().splitlines()) == 1


@pytest.mark.slow
def test_an_unreachable_host_fails_fast_and_clearly(profile):
    start = time.monotonic()
    with pytest.raises(HostError, match="cannot connect"), \
            connect(profile(port=free_port(), connect_timeout_s=3)) as ssh:
        ssh.run(["true"])
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("agent", [True, False], ids=["agent", "exec"])
def test_a_dropped_connection_is_reopened_transparently(profile, testhost, agent):
    with SSHTransport(profile(), agent=agent) as ssh:
        ssh.run(["true"])
        assert testhost.kill_ssh_sessions() >= 1
        assert ssh.run(["echo", "back"]).stdout == "back\n"
        assert ssh.connects == 2


@pytest.fixture
def first_closed(testhost, tmp_path):
    """A port in front of the test host's sshd that closes its first connection the moment it
    accepts it, before a byte (an sshd session killed before its banner), then relays the
    rest; and a known_hosts file that names the host key at that port."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[int] = []
    links: list[socket.socket] = []

    def pump(src, dst):  # one direction, until either side ends (the client's close resets it)
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(port)
            if len(accepted) == 1:
                conn.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", testhost.ssh_port))
            links.extend((conn, upstream))
            for src, dst in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=pump, args=(src, dst), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {testhost.host_key_pub}\n")
    yield port, known, accepted
    try:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
    except OSError:
        pass
    for sock in (listener, *links):
        sock.close()


def test_a_handshake_the_host_closes_before_its_banner_is_tried_again(profile, first_closed):
    """The first connection of a run, accepted and closed before sshd's banner (its session
    killed under the handshake: paramiko reads an end of stream), is a drop like a reset one,
    tried again inside the window. Before: "SSH handshake failed (Error reading SSH protocol
    banner)" at once, and a watch under repeated SSH cuts ended 0.7 s in (make test, 2026-12-06)."""
    port, known, accepted = first_closed
    with SSHTransport(profile(port=port, known_hosts=str(known), connect_timeout_s=5), agent=True) as ssh:
        assert ssh.run(["echo", "in"]).stdout == "in\n"
        assert ssh.connects == 1
    assert len(accepted) == 2, "closed once, then relayed"


def test_closing_a_link_that_died_unnoticed_is_quiet_and_the_next_use_reconnects(profile, testhost):
    """A link whose socket died before paramiko's reader saw it (an SSH cut, a NAT drop): closing
    it sends a channel close that fails with EOFError. Closing is the reconnect's first step and
    every error path's last: it must not raise, or it hides the error it cleans up after (a
    watch under repeated SSH cuts failed so, make test, 2026-12-04)."""
    with SSHTransport(profile(), agent=True) as ssh:
        ssh.write_file("/tmp/ddlab-close-test", b"x")  # an SFTP channel open on the link
        ssh._clients[-1].get_transport().sock.shutdown(socket.SHUT_WR)  # dead, not yet seen
        ssh.close()
        assert ssh.run(["echo", "back"]).stdout == "back\n"


def test_a_connection_dropped_mid_command_reruns_it_once(profile, testhost):
    with connect(profile()) as ssh:
        ssh.run(["true"])
        killer = threading.Timer(0.5, testhost.kill_ssh_sessions)
        killer.start()
        assert ssh.run(["sh", "-c", "sleep 1; echo done"]).stdout == "done\n"
        killer.join()
        assert ssh.connects == 2


def test_the_first_reconnect_after_a_drop_beats_while_the_host_does_not_answer(profile, testhost, capsys):
    """A drop paramiko saw before the next command (its transport no longer active): that command's
    reconnect is the window's first attempt and can block for all of it, so it beats as the later
    attempts do. Before: it was silent, and a watch said nothing for the whole window (finding 3's
    f03 test, 10.0 s without a line, in make test on a fresh clone, 2026-12-05)."""
    window_s = 3.0
    with SSHTransport(profile(connect_timeout_s=window_s), agent=True) as ssh:
        ssh.run(["true"])
        transport = ssh._clients[-1].get_transport()
        with testhost.sshd_unreachable():
            deadline = time.monotonic() + 10
            while transport.is_active() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not transport.is_active(), "the killed session's transport is still active"
            capsys.readouterr()
            with pytest.raises(HostError, match="connection lost"):
                ssh.run(["true"])
    said = capsys.readouterr().err
    waits = [line for line in said.splitlines() if "waiting for the host to answer" in line]
    assert len(waits) >= 2, said  # one a second from half a second in, in a 3 s window
    final = said.splitlines()[-1]
    assert "reconnecting]" in final and "gave up" in final, said
    assert float(final.split("]", 1)[1].split("/")[0]) >= window_s - 0.5, said  # counted from the drop


@pytest.mark.slow
def test_a_connection_that_keeps_dropping_gives_a_clear_error(profile, testhost):
    stop = threading.Event()

    def keep_killing():
        while not stop.wait(0.2):
            testhost.kill_ssh_sessions()

    with connect(profile()) as ssh:
        ssh.run(["true"])
        killer = threading.Thread(target=keep_killing)
        killer.start()
        try:
            with pytest.raises(HostError, match=r"connection lost \d+ times in \d+ s during sleep 5"):
                ssh.run(["sleep", "5"])
        finally:
            stop.set()
            killer.join()


def test_ssh_config_alias_and_proxy_jump_through_the_same_sshd(profile, testhost, tmp_path):
    config = tmp_path / "ssh_config"
    entry = (f"  HostName 127.0.0.1\n  Port {testhost.ssh_port}\n  User root\n"
             f"  IdentityFile {testhost.client_key}\n")
    config.write_text(f"Host th-jump\n{entry}Host th-target\n{entry}  ProxyJump th-jump\n")
    jumped = profile(hostname="th-target", port=None, user=None, identity_file=None,
                     ssh_config=str(config))
    before = set(testhost.sshd_session_pids())  # an earlier test's may still be closing
    with connect(jumped) as ssh:
        assert [h.alias for h in ssh.hops] == ["th-jump", "th-target"]
        assert ssh.run(["echo", "via jump"]).stdout == "via jump\n"
        new = set(testhost.sshd_session_pids()) - before
        assert len(new) >= 2, f"two connections, jump and target; new sshd sessions: {new}"


def test_without_the_agent_python_commands_still_run(profile, caplog):
    with connect(profile(python="/nonexistent/python3")) as ssh:
        assert ssh.run(["echo", "$(x)", "ok"]).stdout == "$(x) ok\n"
        assert not ssh.use_agent
    assert "command agent did not start" in caplog.text


def test_tunnels_close_with_the_transport(profile):
    ssh = connect(profile())
    base = ssh.http_base(free_port())
    ssh.close()
    with pytest.raises(httpx.TransportError):
        http_client.get(base, timeout=2)


@pytest.mark.slow
def test_persistent_round_trip_beats_a_fresh_ssh_process(profile, testhost):
    fresh_argv = ["ssh", "-F", "/dev/null", "-i", str(testhost.client_key), "-p", str(testhost.ssh_port),
                  "-o", f"UserKnownHostsFile={testhost.known_hosts}", "-o", "BatchMode=yes",
                  "root@127.0.0.1", "true"]
    fresh = _median_s(lambda: subprocess.run(fresh_argv, check=True, capture_output=True), 5)
    with connect(profile()) as ssh:
        ssh.run(["true"])
        persistent = _median_s(lambda: ssh.run(["true"]), 30)
    print(f"round trip: persistent {1000 * persistent:.1f} ms, fresh ssh {1000 * fresh:.0f} ms, "
          f"{fresh / persistent:.0f}x")
    assert fresh / persistent >= 10


# --- helpers ------------------------------------------------------------------------


def _median_s(call, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.monotonic()
        call()
        times.append(time.monotonic() - start)
    return sorted(times)[n // 2]


def _alive(transport, pid: str) -> bool:
    """True while pid runs on the transport's host (a zombie waiting for its reaper is dead)."""
    done = transport.run(["cat", f"/proc/{pid}/stat"], check=False)
    return done.ok and done.stdout.rsplit(")", 1)[1].split()[0] != "Z"




def _start_background(transport, argv, unit):
    """Start argv detached on the transport's host; return a function that stops it."""
    if isinstance(transport, LocalTransport):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def stop():
            proc.terminate()
            proc.wait(timeout=10)
        return stop
    transport.run(["systemd-run", f"--unit={unit}", "--collect", *argv])
    return lambda: transport.run(["systemctl", "stop", unit], check=False)


def _get_when_up(url: str, timeout_s: float = 15) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return http_client.get(url, timeout=5).raise_for_status()
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_profile_written_out_with_to_dict_reads_back_the_same():
    """Tests and tools write profiles from ``to_dict()``: every key it gives, the new
    ones included (an empty ``pool``, ``overrides``), must load again."""
    profile = HostProfile.from_dict({"transport": "ssh", "hostname": "gpu1",
                                     "overrides": {"port": 30001}}, name="gpu1")
    data = {k: v for k, v in profile.to_dict().items() if k != "name"}
    assert data["pool"] == [] and "slot" not in data
    assert HostProfile.from_dict(data, name="gpu1") == profile


@pytest.mark.parametrize("content, words", [
    (b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE user@host\n", "a public key, not a private key"),
    (b"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n", "a PuTTY key (.ppk)"),
    (b"hello\n", "not a private key (no -----BEGIN"),
    (b"x" * (64 * 1024 + 1), "too large for a private key"),
], ids=["pub", "ppk", "text", "huge"])
def test_a_key_file_that_is_not_a_private_key_is_one_clear_error(tmp_path, content, words):
    key = tmp_path / "id_ed25519.pub"
    key.write_bytes(content)
    with pytest.raises(ConfigError, match=re.escape(words)) as caught:
        check_identity_file(str(key))
    assert "give the private key" in str(caught.value)


@pytest.mark.parametrize("path, words", [
    ("{tmp}", "is a folder, not a key file"), ("{tmp}/nothing", "no such file"),
    ("/dev/zero", "not a regular file"),
], ids=["folder", "missing", "device"])
def test_a_key_path_that_is_not_a_file_is_refused_without_reading(tmp_path, path, words):
    with pytest.raises(ConfigError, match=words):
        check_identity_file(path.format(tmp=tmp_path))


def test_a_private_key_passes_and_the_profile_key_is_checked_when_resolving(tmp_path):
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n-----END OPENSSH PRIVATE KEY-----\n")
    assert check_identity_file(str(key)) == str(key)
    (tmp_path / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE u@h\n")
    profile = HostProfile.from_dict({"transport": "ssh", "hostname": "gpu",
                                     "identity_file": f"{key}.pub"})
    with pytest.raises(ConfigError, match=f"the private one is probably {re.escape(str(key))}"):
        check_identity_files(resolve_hops(profile, load_ssh_config(None)), "gpu")


def test_files_read_and_written_from_several_threads_at_once_all_complete(transport, scratch):
    """paramiko's SFTP client hands a reply to whichever thread reads the channel next: with
    the host lock's heartbeat reading beside a run's own reads, one thread took the other's
    reply and the other waited for ever (a fresh clone's make test hung in a sweep's
    restore). Four threads, 60 reads and writes each, each must finish, every file read back
    as written."""
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(60):
                path = str(scratch / f"t{n}-{i % 3}.txt")
                transport.write_file(path, f"{n}:{i}".encode())
                assert transport.read_file(path) == f"{n}:{i}".encode()
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not [t for t in threads if t.is_alive()], "a thread still waits for its reply"
    assert not errors, errors
