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
