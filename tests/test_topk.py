"""The selection primitives are exact: top_k equals a full sort, filtered dot products
equal the full scan, whatever the data."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from plaud_index.index.snapshot import selected_dots
from plaud_index.search.topk import SAMPLED_TOP_K, rescale_top, top_k


@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 7, 300, 5000]),
       st.sampled_from(["normal", "sorted", "ties", "masked", "spike", "zeros"]))
@settings(max_examples=60, deadline=None)
def test_top_k_picks_exactly_the_largest_values(seed: int, k: int, shape: str) -> None:
    rng = np.random.default_rng(seed)
    n = SAMPLED_TOP_K * 3  # large enough for the sampled path
    values = rng.standard_normal(n).astype(np.float32)
    if shape == "sorted":  # a sample from the front would mislead
        values.sort()
    elif shape == "ties":
        values = np.round(values, 1)
    elif shape == "masked":  # most rows filtered out (-1), as rank() passes them
        values[rng.random(n) < 0.999] = -1.0
    elif shape == "zeros":  # rescaled cosines: a few hundred above 0, the rest exactly 0
        values = np.clip(values - np.sort(values)[-k // 2 - 1], 0, None)
    elif shape == "spike":  # the best all in one region the even sample barely touches
        values[:] = 0.0
        values[12345:12345 + k] = 1.0 + rng.random(k).astype(np.float32)
    picked = top_k(values, k)
    assert len(picked) == k == len(set(picked.tolist()))
    assert np.array_equal(np.sort(values[picked]), np.sort(values)[-k:])


def test_rescale_top_maps_the_candidates_band_onto_0_1() -> None:
    values = np.array([0.1, 0.5, 0.3, 0.9, 0.2], dtype=np.float32)
    mask = np.array([True, True, True, True, False])
    scaled = rescale_top(values, mask, 3)
    np.testing.assert_allclose(scaled, [0.0, 1 / 3, 0.0, 1.0, 0.0], atol=1e-6)  # 0.3..0.9


@given(st.integers(0, 2**32 - 1), st.sampled_from(["runs", "scattered", "most", "none"]))
@settings(max_examples=40, deadline=None)
def test_filtered_dot_products_equal_the_full_scan_on_the_kept_rows(seed: int,
                                                                    shape: str) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((3000, 16)).astype(np.float32)
    query = rng.standard_normal(16).astype(np.float32)
    if shape == "runs":  # a date range: a few long runs
        wanted = np.zeros(3000, dtype=bool)
        for start in rng.integers(0, 2800, 3):
            wanted[start:start + 200] = True
    elif shape == "scattered":  # a speaker: rows here and there
        wanted = rng.random(3000) < 0.05
    elif shape == "most":
        wanted = rng.random(3000) < 0.9
    else:
        wanted = np.zeros(3000, dtype=bool)
    out = np.zeros(3000, dtype=np.float32)
    selected_dots(vectors, query, wanted, out)
    np.testing.assert_allclose(out[wanted], (vectors @ query)[wanted], rtol=1e-5, atol=1e-5)
