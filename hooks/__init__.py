"""Git hook entry points (post-receive). Thin: they call indexer's public API only; nothing imports hooks."""
