"""gitrag query side: open bundles, hybrid retrieval, the aiohttp server."""
