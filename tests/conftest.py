"""Shared fixtures. The real-host fixture (`testhost`) lives in tests/testhost/."""
