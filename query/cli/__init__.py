"""Command-line subcommands of the query side (``search``, ``serve``, ``ask``, ``graph``, ``eval``, ``mcp``)."""
