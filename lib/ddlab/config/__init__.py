"""What runs: server flags, base configs, overrides, variants and their systemd units.

A base config (:mod:`.bases`) plus overrides (:mod:`.overrides`) is a variant
(:mod:`.variants`), named by what it changes; :mod:`.units` renders it as a
systemd unit with the fields of :mod:`.unit_fields`. Flags are checked against
:mod:`.flags`. Nothing here touches a host.
"""
