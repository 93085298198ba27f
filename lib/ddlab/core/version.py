"""ddlab's version, in one place (the package, the target's /server_info, the lock)."""

__version__ = "0.1.0"
