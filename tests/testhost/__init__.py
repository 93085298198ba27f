"""The real test host: a private systemd + sshd on loopback (see host.py)."""
