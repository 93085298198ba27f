"""What runs: server families, flags, base configs, overrides, variants and their units.

A base config (:mod:`.bases`) names its server family (:mod:`.families`: SGLang
or vLLM), which knows its flags, command and knobs; plus overrides
(:mod:`.overrides`) it is a variant (:mod:`.variants`), named by what it changes;
:mod:`.units` renders it as a systemd unit with the fields of :mod:`.unit_fields`.
SGLang's flags are checked against :mod:`.flags` and :mod:`.sglang`'s release
tables, vLLM's against :mod:`.vllm`'s. Nothing here touches a host.
"""
