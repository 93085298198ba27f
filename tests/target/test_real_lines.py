"""The target's startup, serving, crash and exit lines against real SGLang 0.5.23's, line kind by line kind.

The table is ``tools/target_lines.py``'s ``ROWS`` (each row: the real text as the
0.5.23 source writes it, its file:line, the run that shows it, and either ✅ or
the reason the target cannot print it). Here each run (``CASES``) is the target
as a real process, ``python -m ddlab.target`` under the default ``--log-format
0.5.23``, started once and driven as its rows need (a request, a signal, a
second server on a taken port); every row of the run is matched against its
log, in the order the row names, and the run's exit status is SGLang's. A
reason row must not print the real text (else the row is wrong) and must print
the target's own line where it names one. The last test keeps docs/sglang.md's
section 10 what the table renders (``python tools/target_lines.py --write``).
"""

import http.server
import importlib.util
import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from ddlab.lab import http_client
from testhost.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("target_lines", ROOT / "tools" / "target_lines.py")
lines = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # a dataclass needs it there
_spec.loader.exec_module(lines)

ROWS = {r.id: r for r in lines.ROWS}
READY = "The server is fired up and ready to roll!"
_STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?\] ")


class Proc:
    """``python -m ddlab.target --port P FLAGS`` with its log in a file."""

    def __init__(self, folder: Path, *flags, port=None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / f"target-{self.port}-{time.monotonic_ns()}.log"
        self.started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "ddlab.target", "--port", str(self.port), *flags],
                                         stdout=log, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, text: str, timeout_s=60.0) -> None:
        while text not in self.log():
            if self.proc.poll() is not None:
                pytest.fail(f"exited {self.proc.returncode} before {text!r}:\n{self.log()[-3000:]}")
            if time.monotonic() - self.started > timeout_s:
                pytest.fail(f"no {text!r} in {timeout_s} s:\n{self.log()[-3000:]}")
            time.sleep(0.05)

    def ended(self, timeout_s=120.0) -> int:
        try:
            return self.proc.wait(timeout=timeout_s)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def generate(self, n=24):
        return http_client.post(self.url + "/generate", timeout=60, json={
            "text": "def parse_args(argv=None):\n    parser = argparse.ArgumentParser(",
            "sampling_params": {"max_new_tokens": n, "temperature": 0}})


# --- the runs -----------------------------------------------------------------------------

def _serve_then_sigterm(p: Proc) -> None:
    p.wait_for(READY)
    assert p.generate().status_code == 200
    assert http_client.get(p.url + "/get_server_info", timeout=30).status_code == 200
    p.proc.send_signal(signal.SIGTERM)


def _ready_then_sigterm(p: Proc) -> None:
    p.wait_for(READY)
    p.proc.send_signal(signal.SIGTERM)


def _dies_at_first_generate(p: Proc) -> None:
    p.wait_for(READY)
    with pytest.raises(httpx.TransportError):
        p.generate()


def _holds_a_port_then_sigquit(p: Proc, folder: Path, logs: dict) -> None:
    """Serves, while a second target started on its port runs its whole startup and
    fails to bind (case ``port``); then one generation and SIGQUIT from outside."""
    p.wait_for(READY)
    second = Proc(folder, "--log-level-http", "info", port=p.port)
    logs["port"] = (second.ended(timeout_s=60), second.log())
    assert p.generate().status_code == 200
    p.proc.send_signal(signal.SIGQUIT)


class Quiet(http.server.BaseHTTPRequestHandler):
    """Any HTTP server: it answers every GET 501 (no do_GET), and logs nothing."""

    def log_message(self, format, *args):  # noqa: A002 (http.server's signature)
        pass


def _port_held_by_another_server(folder: Path, logs: dict) -> None:
    """A target started on a port a plain HTTP server (not SGLang) holds (case ``port-foreign``):
    its warmup, run against that server, fails."""
    holder = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=holder.serve_forever, daemon=True).start()
    try:
        p = Proc(folder, *HTTP, port=holder.server_address[1])
        logs["port-foreign"] = (p.ended(timeout_s=120), p.log())
    finally:
        holder.shutdown()
        holder.server_close()


def _model_folder(folder: Path) -> Path:
    """A weights folder of the built-in target (no drafter of its own)."""
    from ddlab.target.checkpoint import WEIGHTS_DIR  # imports torch: not at collection
    model = folder / "my-model"
    model.mkdir(exist_ok=True)
    shutil.copy(WEIGHTS_DIR / "ddlab-tiny.safetensors", model / "model.safetensors")
    shutil.copy(WEIGHTS_DIR / "ddlab-tiny.json", model / "config.json")
    return model


@dataclass
class Case:
    flags: list
    exit: int  # the exit status SGLang's process ends with (negative: by that signal)
    drive: object = None  # what to do with the running process, if anything
    also: tuple = field(default=())  # cases a drive produces on the side (with their exit)


HTTP = ("--log-level-http", "info")
CASES = {
    "dflash": Case(["--speculative-algorithm", "dflash", *HTTP, "--decode-log-interval", "5"], 0,
                   _serve_then_sigterm),
    "ddtree": Case(["--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "8",
                    "--disable-cuda-graph", "--skip-server-warmup"], -signal.SIGTERM, _ready_then_sigterm),
    "plain": Case([*HTTP, "--decode-log-interval", "5"], -signal.SIGKILL, _holds_a_port_then_sigquit,
                  also=(("port", 1),)),
    "capture": Case(["--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "64",
                     "--device-memory-gb", "0.05", "--mem-fraction-static", "0.99"], -signal.SIGKILL),
    "kv": Case(["--mem-fraction-static", "0.001"], -signal.SIGKILL),
    "replay": Case(["--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "16",
                    "--debug-drop-verify-field", "positions"], -signal.SIGKILL, _dies_at_first_generate),
    "context": Case(["--context-length", "4096"], 1),
    "model": Case(["--model-path", "/nonexistent/model"], 1),
    "badalgo": Case(["--speculative-algorithm", "FOO"], 1),
    "nodraft": Case(["--model-path", "{model}", "--speculative-algorithm", "DFLASH"], 1),
    "ambiguous": Case(["--cuda-graph-max-bs", "16"], 2),
    "port-foreign": Case([], -signal.SIGKILL, _port_held_by_another_server),
}


def run(case: str, folder: Path) -> dict:
    """{case: (exit status, log)} for ``case`` and the cases its drive runs on the side."""
    spec, logs = CASES[case], {}
    if spec.drive is _port_held_by_another_server:
        spec.drive(folder, logs)
        return logs
    flags = [f.replace("{model}", str(_model_folder(folder))) if "{model}" in f else f for f in spec.flags]
    p = Proc(folder, *flags)
    try:
        if spec.drive is _holds_a_port_then_sigquit:
            spec.drive(p, folder, logs)
        elif spec.drive is not None:
            spec.drive(p)
    finally:
        logs[case] = (p.ended(), p.log())
    return logs


# --- matching -----------------------------------------------------------------------------

def messages(log: str) -> list[tuple[bool, str]]:
    """Each line of the log: (stamped, the text less the ``[date time] `` a logged record starts with)."""
    return [(bool(_STAMP.match(line)), _STAMP.sub("", line)) for line in log.splitlines()]


def find(template: str, msgs: list, start: int = 0, stamped: bool | None = None) -> int | None:
    """Where ``template``'s lines first match consecutive messages, from ``start`` (the first
    one stamped as ``stamped`` says, when it says)."""
    regexes = lines.pattern(template)
    for i in range(start, len(msgs) - len(regexes) + 1):
        if stamped is not None and msgs[i][0] != stamped:
            continue
        if all(rx.fullmatch(msgs[i + j][1]) for j, rx in enumerate(regexes)):
            return i
    return None


def position(row, msgs) -> int | None:
    """Where ``row``'s line is: its first match after the line of the row it follows (a row
    of another run: that row's text, wherever it is)."""
    start = 0
    if row.after:
        after = ROWS[row.after]
        before = position(after, msgs) if after.case == row.case else find(after.real, msgs)
        if before is None:
            return None
        start = before + 1
    return find(row.real, msgs, start, row.stamped)


def mismatch(row, msgs) -> str | None:
    """Why the log does not bear the row out (None: it does)."""
    if row.reason:
        if row.real and find(row.real, msgs) is not None:
            return "prints the real text: the row's reason is stale"
        if row.stand_in and find(row.stand_in, msgs) is None:
            return "the target's own line is missing"
        return None
    if find(row.real, msgs) is None:
        return "not printed"
    if find(row.real, msgs, stamped=row.stamped) is None:
        return "printed " + ("without" if row.stamped else "with") + " the log's [date time] stamp"
    if position(row, msgs) is None:
        return f"not after '{row.after}'"
    said = [t for t in row.absent if find(t, msgs) is not None]
    return f"also prints {said}" if said else None


# --- the tests ----------------------------------------------------------------------------

def test_every_row_is_run_here_and_follows_a_row_of_its_own_run():
    assert {r.case for r in ROWS.values()} <= set(CASES) | {c for spec in CASES.values() for c, _ in spec.also}
    assert len(ROWS) == len(lines.ROWS), "row ids are unique"
    for row in ROWS.values():
        assert row.group in lines.GROUPS
        assert not row.after or ROWS[row.after].real, row.id
        assert bool(row.reason) or (row.real and not row.stand_in), row.id


def test_templates_read_as_the_source_writes_them():
    [rx] = lines.pattern("Load weight end. elapsed={e:.2f} s, type={t}, {q}avail mem={a:.2f} GB.")
    assert rx.fullmatch("Load weight end. elapsed=5.93 s, type=Qwen3ForCausalLM, avail mem=123.35 GB.")
    assert not rx.fullmatch("Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=1.00 GB.")
    [rx] = lines.pattern("server_args={{'model_path': {p}, {more}}}")
    assert rx.fullmatch("server_args={'model_path': '/m', 'port': 1}") and not rx.fullmatch("server_args=X")
    [rx] = lines.pattern("Context: device=%s gpu_id=%s tp_rank=%d")
    assert rx.fullmatch("Context: device=cuda gpu_id=0 tp_rank=0") and not rx.fullmatch("Context: x")
    msgs = messages("[2026-12-03 10:11:59] INFO:     Started server process [7]\nINFO:     Started server process [7]")
    assert find("INFO:     Started server process [%d]", msgs, stamped=False) == 1


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES], ids=list(CASES))
def test_the_targets_lines_are_the_real_0_5_23_lines(tmp_path, case):
    logs = run(case, tmp_path)
    bad = []
    for name, (status, log) in logs.items():
        want = CASES[name].exit if name in CASES else dict(CASES[case].also)[name]
        if status != want:
            bad.append(f"{name}: exit {status}, SGLang's {want}")
        msgs = messages(log)
        bad += [f"{name}: {r.id} ({r.kind}): {why}" for r in ROWS.values()
                if r.case == name and (why := mismatch(r, msgs))]
    assert not bad, "\n".join(bad) + "\n\n" + "\n\n".join(f"--- {n}\n{log[-4000:]}" for n, (_, log) in logs.items())


def test_docs_sglang_md_holds_the_table_these_rows_render():
    assert lines.committed_section() == lines.render(), "run: python tools/target_lines.py --write"


def test_the_table_counts_what_it_shows():
    section = lines.render()
    for group, (ok, total) in lines.counts().items():
        assert f"{group} {ok} of {total}" in section
    assert section.count("| ✅ |") == sum(ok for ok, _ in lines.counts().values())
    json.dumps(lines.counts())  # plain data, for reports
