"""Helper commands (see the README's development section)."""
