"""The probe hook in real interpreters: a folder from ``install_files`` first on
PYTHONPATH and ``DDLAB_PROBES`` set, as the deploy side sets them on a host, and
a small module written here to probe. Every test runs ``python -c`` in a
subprocess and reads its stderr with :func:`probe_records`."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ddlab.probes import install_files, none_fields, probe_env, probe_records

TARGET = '''\
"""A verify step, shaped like a graph runner's, that fails on a None field."""
LAST = []


class Batch:
    def __init__(self, input_ids, out_cache_loc, bs=4):
        self.input_ids = input_ids
        self.out_cache_loc = out_cache_loc
        self.bs = bs


def verify(batch, api_key=None):
    if batch.out_cache_loc is None:
        exc = TypeError("copy_(): argument 'src' (position 1) must be Tensor, not NoneType")
        LAST.append(exc)
        raise exc  # the raise
    return batch.bs


class SlotBatch:
    __slots__ = ("input_ids", "positions", "__unset")

    def __init__(self, positions):
        self.input_ids, self.positions = [1, 2], positions


def copy_positions(batch):
    return batch.positions.copy_()


class Runner:
    def replay(self, fb):
        return verify(fb)

    execute = replay

    @staticmethod
    def width(x):
        return x * 2

    @classmethod
    def named(cls, x):
        return f"{cls.__name__}:{x}"

    async def later(self, x):
        return x + 1


def child_main():
    try:
        verify(Batch([1, 2], None))
    except TypeError:
        pass


def serve_worker(inbox, outbox):
    """A scheduler's loop: each request's verify step, its answer or its error."""
    while (item := inbox.get()) != "stop":
        try:
            outbox.put({"bs": verify(Batch([1, 2], item))})
        except TypeError as exc:
            outbox.put({"error": str(exc)})
'''
RAISE_LINE = TARGET.splitlines().index("        raise exc  # the raise") + 1
PACKAGE = {"__init__.py": "", "engine.py": "def step(batch):\n    return batch.bs\n"}


@pytest.fixture
def lab(tmp_path):
    """tmp_path with probe/ (install_files) and mods/ (probe_target.py, probe_pkg/)."""
    install_files(tmp_path / "probe")
    mods = tmp_path / "mods"
    (mods / "probe_pkg").mkdir(parents=True)
    (mods / "probe_target.py").write_text(TARGET)
    for name, text in PACKAGE.items():
        (mods / "probe_pkg" / name).write_text(text)
    return tmp_path


def run(lab: Path, code: str, probes=(), *, path=None, extra_env=None, expect=0):
    """``python -c code`` with the probes armed as a host would have them (no probes:
    the module folder alone on PYTHONPATH); -> (stdout, stderr, records)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DDLAB_PROBES", "RANK", "LOCAL_RANK", "SGLANG_TP_RANK")}
    mods = str(lab / "mods")
    env.update(probe_env(probes, lab / "probe", pythonpath=path or mods) if probes
               else {"PYTHONPATH": path or mods})
    env.update(extra_env or {})
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=lab, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == expect, done.stderr
    return done.stdout, done.stderr, probe_records(done.stderr)


def events(records, event):
    return [r for r in records if r["event"] == event]


FAILING_CALL = """
    import json, traceback
    import probe_target as m
    try:
        m.verify(m.Batch([1, 2, 3], None), api_key="sk-planted-value")
    except TypeError as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        print(json.dumps({"same": exc is m.LAST[-1], "file": frame.filename,
                          "line": frame.lineno, "name": frame.name, "message": str(exc)}))
    m.verify(m.Batch([1], None))
"""


def _innermost(stderr: str) -> str:
    return stderr[stderr.rindex('  File "'):]


def test_an_error_is_recorded_and_raised_unchanged(lab):
    plain_out, plain_err, _ = run(lab, FAILING_CALL, expect=1)
    out, err, records = run(lab, FAILING_CALL, ["probe_target.verify"], expect=1)
    assert out == plain_out
    caught = json.loads(out)
    assert caught["same"] and caught["name"] == "verify" and caught["line"] == RAISE_LINE
    assert caught["file"].endswith("probe_target.py")
    assert _innermost(err) == _innermost(plain_err)
    raised = events(records, "raised")
    assert [r["call"] for r in raised] == [1, 2]
    assert raised[0]["error"] == {"type": "TypeError", "message": caught["message"]}
    assert raised[0]["summaries"]["subject"] == "batch"
    fields = {f["name"]: f for f in raised[0]["summaries"]["fields"]}
    assert fields["out_cache_loc"] == {"name": "out_cache_loc", "type": "NoneType", "value": None}
    assert fields["input_ids"] == {"name": "input_ids", "type": "list", "len": 3}
    assert fields["bs"] == {"name": "bs", "type": "int", "value": 4}
    assert none_fields(records) == ["out_cache_loc"]


def test_a_record_is_one_line_with_the_schema(lab):
    _, err, records = run(lab, FAILING_CALL, ["probe_target.verify"],
                          extra_env={"SGLANG_TP_RANK": "3"}, expect=1)
    lines = [line for line in err.splitlines() if line.startswith("DDLAB_PROBE ")]
    assert len(lines) == len(records) == 3  # armed, two raised
    for record in records:
        assert {"pid", "rank", "target", "mode", "event", "call"} <= set(record)
        assert record["rank"] == 3 and record["target"] == "probe_target.verify"
        assert record["mode"] == "error"
    assert records[0]["event"] == "armed" and records[0]["module"] == "probe_target"


def test_a_secret_named_value_never_appears(lab):
    code = """
        import probe_target as m
        batch = m.Batch([1], None)
        batch.password, batch.session_token = "hunter2-planted", b"tok-planted"
        batch.num_token_non_padded = 987654321
        try:
            m.verify(batch, api_key="sk-planted-value")
        except TypeError:
            pass
    """
    _, err, records = run(lab, code, ["probe_target.verify"])
    assert "planted" not in err
    summaries = events(records, "raised")[0]["summaries"]
    args = {a["name"]: a for a in summaries["args"]}
    assert args["api_key"] == {"name": "api_key", "type": "str", "secret": True}
    fields = {f["name"]: f for f in summaries["fields"]}
    assert fields["password"] == {"name": "password", "type": "str", "secret": True}
    assert fields["session_token"] == {"name": "session_token", "type": "bytes", "secret": True}
    assert fields["num_token_non_padded"]["value"] == 987654321  # a number is evidence


def test_slot_attributes_are_summarized_as_ddlab_targets_batch_has_them(lab):
    code = """
        import probe_target as m
        try:
            m.copy_positions(m.SlotBatch(None))
        except AttributeError:
            pass
    """
    _, _, records = run(lab, code, ["probe_target.copy_positions"])
    [raised] = events(records, "raised")
    assert raised["summaries"]["fields"] == [{"name": "input_ids", "type": "list", "len": 2},
                                             {"name": "positions", "type": "NoneType", "value": None}]
    assert raised["error"]["type"] == "AttributeError"


def test_a_spawn_child_is_probed_too(lab):
    code = """
        import json, multiprocessing, os
        import probe_target as m
        if __name__ == "__main__":
            child = multiprocessing.get_context("spawn").Process(target=m.child_main)
            child.start()
            child.join()
            print(json.dumps({"parent": os.getpid(), "child": child.pid, "exit": child.exitcode}))
    """
    out, _, records = run(lab, code, ["probe_target.verify"])
    pids = json.loads(out)
    assert pids["exit"] == 0 and pids["child"] != pids["parent"]
    raised = events(records, "raised")
    assert [r["pid"] for r in raised] == [pids["child"]]
    assert none_fields(raised) == ["out_cache_loc"]
    assert {r["pid"] for r in events(records, "armed")} == {pids["parent"], pids["child"]}


def test_first_n_records_exactly_n_calls_through_an_alias(lab):
    code = """
        import probe_target as m
        runner = m.Runner()
        print([runner.execute(m.Batch([1], 0, bs=b)) for b in range(5)])
    """
    out, _, records = run(lab, code, ["probe_target.Runner.replay:first=3"])
    assert out.strip() == "[0, 1, 2, 3, 4]"
    calls = events(records, "call")
    assert [r["call"] for r in calls] == [1, 2, 3]
    assert [f["value"] for r in calls for f in r["summaries"]["fields"] if f["name"] == "bs"] \
        == [0, 1, 2]
    assert all(r["summaries"]["subject"] == "fb" for r in calls)
    assert events(records, "armed")[0]["aliases"] == ["execute"]
    assert not events(records, "stopped")


def test_time_records_the_seconds_of_each_call(lab):
    code = """
        import probe_target as m
        print([m.Runner.width(i) for i in range(3)])
    """
    out, _, records = run(lab, code, ["probe_target.Runner.width:time"])
    assert out.strip() == "[0, 2, 4]"
    times = events(records, "time")
    assert [r["call"] for r in times] == [1, 2, 3]
    assert all(isinstance(r["seconds"], float) and 0 <= r["seconds"] < 1 for r in times)


@pytest.mark.parametrize("probe, code", [
    ("probe_target.Runner.width:time", "[m.Runner.width(i) for i in range(60)]"),
    ("probe_target.verify", "[probe(m.verify, m.Batch([1], None)) for _ in range(60)]"),
], ids=["time", "error"])
def test_at_most_50_records_per_target_then_one_stopped(lab, probe, code):
    _, _, records = run(lab, f"""
        import probe_target as m
        def probe(f, *a):
            try:
                f(*a)
            except TypeError:
                pass
        {code}
    """, [probe])
    counted = [r for r in records if r["event"] != "armed"]
    assert len(counted) == 51
    assert counted[-1]["event"] == "stopped" and counted[-1]["limit"] == 50
    assert counted[-2]["call"] == 50


def test_methods_stay_methods(lab):
    code = """
        import asyncio, inspect
        import probe_target as m
        r = m.Runner()
        print(r.width(3), m.Runner.width(4), r.named(1), m.Runner.named(2),
              asyncio.run(r.later(5)), m.verify.__name__, m.Runner.replay.__qualname__,
              inspect.signature(m.Runner.replay), inspect.signature(m.Runner.named),
              inspect.iscoroutinefunction(m.Runner.later),
              type(m.Runner.__dict__["width"]).__name__, type(m.Runner.__dict__["named"]).__name__)
    """
    probes = ["probe_target.Runner.width:time", "probe_target.Runner.named:first=2",
              "probe_target.Runner.later:first=1", "probe_target.Runner.replay"]
    plain, _, _ = run(lab, code)
    out, _, records = run(lab, code, probes)
    assert out == plain
    named = events(records, "call")
    assert [(r["target"], r["summaries"]["subject"]) for r in named] == [
        ("probe_target.Runner.named", "x"), ("probe_target.Runner.named", "x"),
        ("probe_target.Runner.later", "x")]
    assert len(events(records, "time")) == 2


def test_a_missing_target_says_the_closest_name_once_and_the_program_goes_on(lab):
    code = """
        import probe_target as m, probe_pkg.engine as e
        print(m.Runner().execute(m.Batch([1], 0)), e.step(m.Batch([1], 0, bs=7)))
    """
    out, _, records = run(lab, code, ["probe_target.Runner.replya", "probe_pkg.engin.step",
                                      "probe_pkg.engine.step:first=1"])
    assert out.strip() == "4 7"
    missing = events(records, "missing")
    assert [(r["target"], r["closest"]) for r in missing] == [
        ("probe_target.Runner.replya", "probe_target.Runner.replay"),
        ("probe_pkg.engin.step", "probe_pkg.engine.step")]
    assert "did you mean probe_target.Runner.replay?" in missing[0]["error"]["message"]
    assert [r["target"] for r in events(records, "call")] == ["probe_pkg.engine.step"]


def test_a_module_imported_before_the_hook_is_wrapped_at_once(lab):
    code = f"""
        import sys
        import probe_target as m
        sys.path.insert(0, {str(lab / "probe")!r})
        import ddlab_probe_hook
        print(m.Runner.width(2))
    """
    out, _, records = run(lab, code, ["probe_target.Runner.width:time"], path=str(lab / "mods"))
    assert out.strip() == "4"
    assert [r["call"] for r in events(records, "time")] == [1]


def test_an_existing_sitecustomize_still_runs(lab):
    other = lab / "site"
    other.mkdir()
    (other / "sitecustomize.py").write_text(
        "import os\nwith open(os.environ['MARKER'], 'w') as f:\n    f.write(__name__)\n")
    marker = lab / "marker"
    code = "import probe_target as m\nprint(m.Runner.width(1))"
    out, _, records = run(lab, code, ["probe_target.Runner.width:time"],
                          path=f"{other}:{lab / 'mods'}", extra_env={"MARKER": str(marker)})
    assert out.strip() == "2"
    assert marker.read_text() == "sitecustomize"
    assert len(events(records, "time")) == 1


def test_a_malformed_probe_list_is_one_failed_record(lab):
    code = "import probe_target as m\nprint(m.Runner.width(1))"
    out, _, records = run(lab, code, ["probe_target.Runner.width"],
                          extra_env={"DDLAB_PROBES": "[{not json"})
    assert out.strip() == "2"
    assert [r["event"] for r in records] == ["failed"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_a_tensor_attribute_shows_shape_dtype_device_and_no_values(lab):
    """Also on ddlab's own stand-in: its CudaGraphRunner.replay (called by its alias
    ``execute``) with a real ForwardBatch (``__slots__``) that lacks num_token_non_padded."""
    code = """
        import types, torch
        from ddlab.target import cuda_graph_runner as cgr
        ids = torch.full((4, 3), 7777, dtype=torch.int64)
        batch = cgr.ForwardBatch(batch_size=4, input_ids=ids, positions=ids,
                                 custom_mask=torch.ones(12, dtype=torch.bool))
        runner = types.SimpleNamespace(
            replay_prepare=lambda fb: fb.num_token_non_padded.copy_(fb.positions))
        try:
            cgr.CudaGraphRunner.execute(runner, batch)
        except AttributeError:
            pass
    """
    target = "ddlab.target.cuda_graph_runner.CudaGraphRunner.replay"
    _, err, records = run(lab, code, [target])
    assert "7777" not in err
    assert events(records, "armed")[0]["aliases"] == ["execute"]
    [raised] = events(records, "raised")
    fields = {f["name"]: f for f in raised["summaries"]["fields"]}
    assert fields["input_ids"] == {"name": "input_ids", "type": "Tensor", "shape": [4, 3],
                                   "dtype": "torch.int64", "device": "cpu"}
    assert fields["custom_mask"]["dtype"] == "torch.bool"
    assert fields["batch_size"]["value"] == 4
    assert raised["summaries"]["subject"] == "forward_batch"
    assert none_fields(records) == ["tokens_per_req", "req_pool_indices", "seq_lens",
                                    "out_cache_loc", "num_token_non_padded"]


def test_a_server_that_serves_from_a_spawn_worker_is_probed_in_the_worker(lab):
    """SGLang's shape: the HTTP process hands requests to a scheduler started with the
    ``spawn`` method; the verify step (and so the probe's record) runs in the worker."""
    code = """
        import http.server, json, multiprocessing, os, threading, urllib.request
        import probe_target as m

        if __name__ == "__main__":
            ctx = multiprocessing.get_context("spawn")
            inbox, outbox = ctx.Queue(), ctx.Queue()
            scheduler = ctx.Process(target=m.serve_worker, args=(inbox, outbox))
            scheduler.start()

            class Handler(http.server.BaseHTTPRequestHandler):
                def do_POST(self):
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    inbox.put(body["out_cache_loc"])
                    data = json.dumps(outbox.get(timeout=30)).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

                def log_message(self, *args):
                    pass

            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            url = f"http://127.0.0.1:{server.server_address[1]}/generate"
            answers = []
            for loc in ([7, 8], None):
                req = urllib.request.Request(url, json.dumps({"out_cache_loc": loc}).encode())
                answers.append(json.loads(urllib.request.urlopen(req, timeout=30).read()))
            inbox.put("stop")
            scheduler.join(timeout=30)
            server.shutdown()
            print(json.dumps({"parent": os.getpid(), "worker": scheduler.pid, "answers": answers}))
    """
    out, _, records = run(lab, code, ["probe_target.verify"])
    seen = json.loads(out)
    assert seen["answers"][0] == {"bs": 4}, "the probe changed nothing for a good request"
    assert "NoneType" in seen["answers"][1]["error"], "the error passed through untouched"
    raised = events(records, "raised")
    assert [r["pid"] for r in raised] == [seen["worker"]] and seen["worker"] != seen["parent"]
    assert none_fields(raised) == ["out_cache_loc"]
