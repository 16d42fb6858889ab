"""The aiohttp server: bundle holder and swap, routes, security, workers, MCP, metrics, the web page."""
