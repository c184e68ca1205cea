"""SQLite (``sqlite:///path.db``): the embedded default, a store in one file."""
