"""OpenAI-shaped endpoints of the target: ``/v1/models``, ``/v1/completions``, ``/v1/chat/completions``.

Contract: the shapes SGLang serves (``object``, ``choices``, ``usage``;
streaming as ``data: {chunk}`` lines then ``data: [DONE]``; with
``stream_options.include_usage`` a last chunk of no choices carries the usage, as vLLM
0.34.0's vllm/entrypoints/openai/completion/serving.py:581-610). A chat is
flattened to ``role: content`` lines ending in ``assistant: `` (the model
is a byte-level code model; there is no chat template to honour). Omitted
``max_tokens`` is 16, as OpenAI's default; ``n`` must be 1.
"""

from __future__ import annotations

import json
import time

from ddlab.target.requests import BadRequest, Reply, decode_text, json_reply, make_req, stream_reply

__all__ = ["models", "completions"]


def models(state) -> dict:
    ctx = state.engine.context_len if state.engine else None
    return {"object": "list", "data": [{"id": state.name, "object": "model", "created": state.created,
                                        "owned_by": "sglang", "root": state.name, "parent": None,
                                        "max_model_len": ctx}]}


def _prompt(body: dict, chat: bool):
    if not chat:
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if prompt is None:
            raise BadRequest("'prompt' is required")
        return prompt
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list of {role, content}")
    try:
        return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
    except (KeyError, TypeError):
        raise BadRequest("each message needs 'role' and 'content'") from None


def _sampling(body: dict) -> dict:
    if body.get("n", 1) != 1:
        raise BadRequest(f"n={body.get('n')}: only n=1 is supported")
    sp = {"max_new_tokens": body.get("max_tokens") or body.get("max_completion_tokens") or 16,
          "temperature": body.get("temperature") or 0}
    if body.get("stop") is not None:
        sp["stop"] = body["stop"]
    return sp


def _choice(req, text, chat, delta=False):
    reason = req.finish_reason and req.finish_reason["type"]
    matched = (req.finish_reason or {}).get("matched")
    body = ({"delta" if delta else "message": {"role": "assistant", "content": text}} if chat
            else {"text": text, "logprobs": None})
    return {"index": 0, **body, "finish_reason": reason, "matched_stop": matched}


def completions(state, body: dict, chat: bool) -> Reply:
    state.life.begin_running()  # the tokenizer manager's first request installs its handlers
    engine = state.require_engine()
    req = make_req(engine, _prompt(body, chat), _sampling(body))
    head = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{req.rid}", "created": int(time.time()),
            "model": body.get("model") or state.name}
    kind = "chat.completion" if chat else "text_completion"
    if body.get("stream"):
        return stream_reply(_stream(state, req, head, kind, chat,
                                    bool((body.get("stream_options") or {}).get("include_usage"))))
    for _ in state.run(req):
        pass
    return json_reply({**head, "object": kind, "choices": [_choice(req, decode_text(req.output_ids), chat)],
                       "usage": _usage(req)})


def _usage(req) -> dict:
    return {"prompt_tokens": len(req.input_ids), "completion_tokens": len(req.output_ids),
            "total_tokens": len(req.input_ids) + len(req.output_ids)}


def _stream(state, req, head, kind, chat, usage=False):
    sent = ""
    try:
        for r in state.run(req):
            text = decode_text(r.output_ids, r.finish_reason is not None)
            chunk = {**head, "object": f"{kind}.chunk" if chat else kind,
                     "choices": [_choice(r, text[len(sent):], chat, delta=True)]}
            sent = text
            yield f"data: {json.dumps(chunk)}\n\n"
        if usage:  # stream_options.include_usage: the usage in a last chunk of no choices
            yield f"data: {json.dumps({**head, 'object': kind, 'choices': [], 'usage': _usage(req)})}\n\n"
        yield "data: [DONE]\n\n"
    finally:
        if req.finish_reason is None:
            state.engine.abort(req)
