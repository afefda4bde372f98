"""Search, a pipeline stage and pure: the analyser (terms for every script), ranking over
vectors and keyword scores with filters first (``rank``), the exact top-k, snippets
centred on the match, browsing by date, and the conversation around a moment."""
