"""Graph runners laid out as SGLang 0.5.23 lays them out (``sglang/srt/model_executor/runner/``)."""
