"""plaud-index-mcp: private, local semantic search over Plaud recordings."""

import os as _os

__version__ = "0.1.0"

# Nothing leaves the machine but calls to Plaud (and a model download): onnxruntime writes
# a device id and queues usage events for Microsoft's collector unless this is set before
# it is first imported, and huggingface_hub sends usage data with downloads unless told
# not to. Every process of ours imports this package before either library (the server,
# the indexer, the CLI, the bench scripts), and what it starts inherits the environment.
# Set, not defaulted: a stray "0" in the user's shell must not switch it back on.
TELEMETRY_OFF = {"ORT_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
_os.environ.update(TELEMETRY_OFF)

# numpy's OpenBLAS threads spin for about 0.1 s after each matrix product (the vector scan
# of every search) before they sleep, and spinning they take the cores the next query's
# model run needs: a server on 10,000 chunks then answered in ~20 ms instead of ~10, at
# random, for its whole life (bench/server_latency.py). Sleeping at once keeps the scan's
# two threads (a 100k scan 5.5 ms, 10.7 on one) without the spin. Defaulted: a user's own
# setting wins. Set before numpy is first imported, as above.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
