"""SGLang's routers: a request they failed to take in or refused, the router serving on (rounds 51, 64, 70).

The 0.1.x router (``sglang/srt/managers/router/model_rpc.py``) runs each step in ``exposed_step``: it
takes in the step's new requests (``handle_generate_request`` for each) and runs one forward step, all
inside one ``try`` whose ``except Exception`` logs "Exception in ModelRpcClient:" with the traceback and
returns the step's outputs, re-raising nothing (0.1.10 ``model_rpc.py:150-172``, 0.1.11 ``:153-175``,
0.1.16 ``:181-202``); the manager's ``loop_for_forward`` then asks for the next step (0.1.11
``router/manager.py:34-49``). ``handle_generate_request`` builds the request (its image's padded input
ids, 0.1.11 ``:243``; its regex FSM, ``:254-259``) and appends it to the forward queue only at its end
(``:267``): an exception there loses that one request (its client gets no answer) and nothing the
server holds, so the next step serves the rest. A traceback through that frame is one request's
error: ``request_error`` at serving, no crash.

Not this: the same header over ``forward_step``'s frames (a batch's forward or sampling failing). The
failed batch stays in the running batch and fails again at every step (the corpus's h40007, h5013,
a015 and h6015 are labelled crashes), so those keep reading as a crash of their own kind.

(round 64) sgl-router, SGLang's Rust router (``sglang_router_rs``), answers a route it does not implement
in the mode it runs in with HTTP 501 and a plain-text body: "Model info endpoint not yet implemented in
RouterManager" (sglang-router 0.2.2 src/routers/router_manager.rs:342-344, the inference-gateway mode's
``get_model_info``), "Embeddings endpoint not implemented for PD router" (http/pd_router.rs:1214-1215), "Health
generate not yet implemented for gRPC" (grpc/router.rs:241-242) and their like (routers/mod.rs:103). The
router goes on serving: a client that printed that body (curl) was refused one request, ``request_error`` at
serving, no crash.

(round 70) SGLang 0.3.x's data-parallel controller (``controller_multi``, started for ``--dp`` > 1) routes
only generate requests, flushes and aborts to its workers; any other object the tokenizer manager sends it (a
weight update, a tokenized embedding request) is logged as "Invalid object: <the object's repr>" and dropped
(0.3.0 ``managers/controller_multi.py:183``, 0.3.2 ``:180``). It reads requests only in ``loop_for_forward``,
which starts after the controller reported "init ok" to the launcher (0.3.2 ``:200-203``): the server was
serving. That request's client gets no answer (a weight update's caller waits on its result, 0.3.2
``tokenizer_manager.py:537-539``): ``request_error`` at serving, no crash. Not this: the tokenizer or
detokenizer manager raising ``ValueError: Invalid object: ...`` (0.1.11 ``tokenizer_manager.py:262``, 0.4.0
``:695``), an exception of its own.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "ROUTER_INTAKE_FRAME", "ROUTER_NOT_IMPLEMENTED", "DP_CONTROLLER_DROPPED"]

# the router's intake of one request, only ever called under exposed_step's catch
ROUTER_INTAKE_FRAME = r"managers[/\\]router[/\\]model_rpc\.py\", line \d+, in handle_generate_request\s*$"

ROUTER_REQUEST_FAILED = Signature(
    "router_request_failed", "request_error", "SGLang 0.1.x's router failed to take in one request",
    ("SGLang 0.1.x's router raised while taking in one request (building its input ids, its image "
     "padding or its regex) and logged it as 'Exception in ModelRpcClient'; that request was dropped "
     "(its client waits with no answer) and the router kept serving the others. A multimodal model "
     "whose image token is not in the prompt ('N is not in list' from pad_input_ids) means the prompt "
     "was sent without the model's chat template or its image token: send it through the chat template "
     "(`--chat-template`) or put the image token in the prompt. Otherwise the request's own fields are "
     "the suspects; a release this old is best upgraded.",),
    patterns=(r".",), context=(ROUTER_INTAKE_FRAME,), absent=(r", in forward_step\s*$",),
    priority=11, phase="serving", request=True, cut_ok=True,
    sources=(("sglang 0.1.10", "sglang/srt/managers/router/model_rpc.py:167"),
             ("sglang 0.1.11", "sglang/srt/managers/router/model_rpc.py:170"),
             ("sglang 0.1.11", "sglang/srt/managers/router/model_rpc.py:243"),
             ("sglang 0.1.16", "sglang/srt/managers/router/model_rpc.py:198")))

# sgl-router's 501 bodies, each a whole line where a client printed it: "<What> endpoint not [yet] implemented
# [in RouterManager | for PD router]", "Health generate not yet implemented for gRPC [PD]", "responses api not yet
# implemented in inference gateway mode" (router_manager.rs:431)
_NOT_IMPLEMENTED = (r"^\s*(?:[A-Z][\w ]{0,48} endpoint|Health generate|responses api) not (?:yet )?implemented"
                    r"(?: (?:in RouterManager|for (?:PD router|gRPC(?: PD)?)|in inference gateway mode))?\s*$")
ROUTER_NOT_IMPLEMENTED = Signature(
    "router_not_implemented", "request_error", "sgl-router does not implement the route it was asked",
    ("sgl-router answered the request with 501 Not Implemented: the route exists on an SGLang server but this "
     "router does not forward it in the mode it runs in (PD disaggregation, gRPC, the inference gateway's "
     "RouterManager). The router is still serving. Send that request to a worker directly (at the address "
     "the router lists it by), or use a route the router implements (`/v1/models` lists the models it serves).",),
    lines=(_NOT_IMPLEMENTED,),
    priority=9, phase="serving", request=True,
    sources=(("sglang-router 0.2.2", "src/routers/router_manager.rs:342 (get_model_info: StatusCode::NOT_IMPLEMENTED, "
                                     "\"Model info endpoint not yet implemented in RouterManager\" :344)"),
             ("sglang-router 0.2.2", "src/routers/http/pd_router.rs:1215"),
             ("sglang-router 0.2.2", "src/routers/grpc/router.rs:241"),
             ("sglang-router 0.2.2", "src/routers/mod.rs:103"),
             ("sglang-router 0.2.2", "src/routers/router_manager.rs:431")))

# the controller's line: "Invalid object: " then a dataclass's repr, "Name(field=...)", as the whole message
_DP_DROPPED = r"^(?-i:Invalid object): [A-Z]\w*\("
DP_CONTROLLER_DROPPED = Signature(
    "dp_controller_dropped_request", "request_error",
    "SGLang 0.3.x's data-parallel controller dropped a request it does not route",
    ("SGLang 0.3.x's data-parallel controller (`--dp-size` > 1) routes only generate requests to its "
     "workers: it logged the object named on this line as invalid and dropped it, and that request's "
     "client gets no answer. A weight update (/update_weights) dropped so also keeps the tokenizer "
     "manager's update lock, so later generate requests wait behind it: restart the server. Run the "
     "update (or the embedding request) with `--dp-size 1`, or upgrade: later releases route weight "
     "updates to every data-parallel worker.",),
    lines=(_DP_DROPPED,), priority=11, phase="serving", request=True,
    sources=(("sglang 0.3.0", "sglang/srt/managers/controller_multi.py:183"),
             ("sglang 0.3.2", "sglang/srt/managers/controller_multi.py:180"),
             ("sglang 0.3.2", "sglang/srt/managers/controller_multi.py:200 (\"init ok\", then loop_for_forward "
                              ":203)"),
             ("sglang 0.3.2", "sglang/srt/managers/tokenizer_manager.py:537-539")))

SIGNATURES = [ROUTER_REQUEST_FAILED, ROUTER_NOT_IMPLEMENTED, DP_CONTROLLER_DROPPED]
