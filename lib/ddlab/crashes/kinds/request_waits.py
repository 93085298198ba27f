"""The tokenizer manager's per-request coroutines: a traceback that ends in one of them is that request's.

Contract: :data:`TOKENIZER_REQUEST_WAIT` matches a traceback (a chain's text) whose innermost SGLang frame is
the tokenizer manager's ``generate_request`` or ``_wait_one_response``; :mod:`.requests` adds it to
``REQUEST_FRAMES``, so such a traceback reads as one request's error (``request_error``, serving) unless the
log shows the process dying right after, as any request's error does.

Why they are a request's: both run in the HTTP server's process for one request. The HTTP handler calls
``generate_request`` for the request it serves; it waits for that request's output in
``_wait_one_response`` (0.5.16 sglang/srt/managers/tokenizer_manager.py:624 generate_request, :667 the call,
:1482-1488 ``state = self.rid_to_state[obj.rid]``; 0.5.12 :1285, :1291; 0.5.23 :1936-1943). What either
raises goes to that request's handler: the OpenAI endpoints answer it with a 500 and log "Error in request"
(0.5.16 sglang/srt/entrypoints/openai/serving_base.py:127-133; 0.5.12 :127-133; 0.5.23 :136-137), the native
endpoints' ASGI stack answers 500 (uvicorn's "Exception in ASGI application"), and the server serves on.
Only where that frame is the innermost SGLang one: a deeper SGLang frame (the tokenizer manager's output
loop, ``_handle_batch_output``) is where the error was, and that loop is the whole server's.

Why a module of its own: requests.py is at its ~400-line bound (../shared/STYLE.md).
"""

from __future__ import annotations

__all__ = ["TOKENIZER_REQUEST_WAIT"]

# the frame, then to the text's end no frame of a file under an "sglang" folder (asyncio's and the
# standard library's may follow); written with [^\n] so it reads the same with or without re.S
TOKENIZER_REQUEST_WAIT = (
    r'managers[/\\]tokenizer_manager\.py", line \d+, in (?:generate_request|_wait_one_response)[ \t]*(?:\n|\Z)'
    r'(?:(?![ \t]*File "[^"\n]*[/\\]sglang[/\\])[^\n]*(?:\n|\Z))*\Z')
