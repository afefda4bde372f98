"""The embedding model, a pipeline stage: the ``Embedder`` protocol and its ONNX runtime
(``embedder``), the known models' settings (``specs``), finding and verifying the model's
files (``files``), and which model suits the index's languages (``languages``)."""
