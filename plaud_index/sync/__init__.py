"""The always-on indexer, one of the product's two processes: the cycle, what it fetches,
the one owner of ``sync-state.json``, progress, the indexer lock and the daemon loop."""
