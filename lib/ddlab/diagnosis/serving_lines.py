"""Lines written only for a client's request to a server that is up: a paste that begins with one began mid-serving.

Contract: :data:`MID_SERVING_TEXTS` is one regex (alternatives) of lines that show a request being
served where the paste shows no startup before them: a cache flush a client asked for, uvicorn's 400
to bytes it could not parse, and (round 76) SGLang Diffusion's record of one request's sampling
params and the pipeline stages it runs, and verl's client timing out a request to the server.
(round 82) :data:`WEIGHT_UPDATE` is the start of an online weight update, a request to a running server: it
marks serving wherever it stands, and the weight-load lines after it are the update's, not start-up's.
:mod:`.logtext` joins them with its batch and request lines (``_MID_SERVING``); they count only where
no startup line came before (a warmup request is no serving).

Why a module of its own: logtext.py is at its ~400-line bound (../shared/STYLE.md).
"""

from __future__ import annotations

import re

__all__ = ["MID_SERVING_TEXTS", "WEIGHT_UPDATE"]

# A cache flush, a client's request: "Cache flushed successfully!" (0.4.10.post2 managers/scheduler.py:2172, 0.5.23
# :5538), /flush_cache answered (0.5.23 entrypoints/http_server.py:1025); (round 71) uvicorn's 400 "Invalid HTTP
# request received." to bytes it could not parse on a connection it accepted (uvicorn 0.54.0 protocols/http/
# h11_impl.py:183, httptools_impl.py:176): a client's request (the warmup's is well formed).
_FLUSHED = r"Cache flushed successfully!|\"(?:GET|POST) /flush_cache\S* HTTP/[\d.]+\" 200"
_BAD_REQUEST = r"^(?:WARNING:\s+)?Invalid HTTP request received\.$"
# (round 76) SGLang Diffusion logs each request's sampling params as a record whose first line is "Sampling
# params:" alone (0.5.7 multimodal_gen/runtime/pipelines_core/schedule_batch.py:248, logged at :265 by Req.log;
# 0.5.13 :382, :400; 0.5.6 configs/sample/sampling_params.py:607, :624), called as the pipeline's forward
# begins on a request (0.5.7 pipelines_core/composed_pipeline_base.py:330), then "Running pipeline stages:
# [...]" (:334): one request's generation, `sglang generate`'s as a server's
_DIFFUSION_REQUEST = r"(?:^|\] )Sampling params:\s*$|Running pipeline stages: \["
# (round 76) verl's HTTP client of an SGLang server (its rollout engine) timing out one request to an endpoint, a
# server up and answering (release/resume_memory_occupation between rollouts): "Async request to ENDPOINT timed
# out (attempt N)" (volcengine/verl 3122631 verl/workers/rollout/sglang_rollout/http_server_engine.py:704; its
# resume_memory_occupation calls it, :745); its connection errors (:706) are a server not up, not counted
_CLIENT_TIMEOUT = r"Async request to \w+ timed out \(attempt \d+\)"
MID_SERVING_TEXTS = rf"{_FLUSHED}|{_BAD_REQUEST}|{_DIFFUSION_REQUEST}|{_CLIENT_TIMEOUT}"

# (round 82) An online weight update from disk: the tokenizer manager's "Start update_weights. Load format=..."
# (0.4.10.post2 managers/tokenizer_manager.py:996, 0.5.8.post1 :1352, 0.5.23 :2297), written when a client POSTs
# /update_weights_from_disk (0.5.8.post1 entrypoints/http_server.py:789-792) or an Engine's user calls it
# (entrypoints/engine.py:563), and the model runner's "Update engine weights online from disk begin. avail mem=..."
# (0.4.10.post2 model_executor/model_runner.py:726, 0.5.8.post1 :1028, 0.5.23
# model_runner_components/weight_updater.py:188), called by the scheduler for that request (0.5.8.post1
# managers/scheduler_update_weights_mixin.py:50 -> tp_worker.py:93) or by the expert rebalancer of a serving
# server (model_runner.py:1005 in update_expert_location). The start-up loads through load_model, which writes
# neither: the loader's lines after them ("Beginning to load weights", the shard bars) reload a running server
WEIGHT_UPDATE = re.compile(r"Start update_weights\. Load format=|Update engine weights online from disk begin\b")
