"""A request's frames are the server's HTTP handlers, not an HTTP client's: SGLang's OpenAI serving entry
``handle_request`` (0.5.23 srt/entrypoints/openai/serving_base.py:80) is a request the server served, while
httpx's and httpcore's transports call their client-side sends ``handle_request`` too. A server that dies at
launch downloading from the Hugging Face Hub (httpx under huggingface_hub) must read crashed, never "one
request failed; the server kept serving"."""

from __future__ import annotations

from fieldkit import REAL, VLLM_REAL, assert_in_sglang_wheel, read_log

from ddlab.diagnosis.diagnosis import diagnose


def _hub_read_timeout() -> str:
    """w3605 (vLLM 0.21.0 reading the Hub's answer at launch, its frames through httpx and httpcore's
    ``handle_request``) as it would read had the read timed out instead of the SIGTERM it got."""
    lines = read_log(VLLM_REAL / "w3605.log").splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if "signal_handler" in line)
    return "".join(lines[:cut]) + "(APIServer pid=8410) httpx.ReadTimeout: The read operation timed out\n"


def test_a_launch_that_dies_in_the_hub_clients_handle_request_is_a_crash():
    found = diagnose(_hub_read_timeout())
    assert (found.crashed, found.kind, found.phase) == (True, "unknown", "launch"), found.render()
    assert found.render().startswith("CRASHED: unknown")


def test_sglangs_own_handle_request_is_still_a_request():
    found = diagnose((REAL / "h8022.log").read_text())
    assert (found.crashed, found.kind, found.phase) == (False, "request_error", "serving")


def test_the_frames_are_their_writers_own():
    import httpcore
    import httpx

    # the clients' sends, in the httpx and httpcore this venv installs (ddlab's own HTTP client)
    assert callable(httpx.HTTPTransport.handle_request) and callable(httpcore.ConnectionPool.handle_request)
    assert_in_sglang_wheel("0.5.23", "sglang/srt/entrypoints/openai/serving_base.py", "async def handle_request(")
