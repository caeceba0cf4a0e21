"""Helper commands (see docs/development.md)."""
