"""The on-disk index engine: segments, manifest, writer, snapshot, postings."""
