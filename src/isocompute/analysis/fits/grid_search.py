"""The grid search behind every sigmoid fit (`fits.sigmoid`, `fits.noise`): for fixed
`(C_mid, B)` the model is linear in `A`, so the best `A` on its grid is the grid value
nearest the least-squares optimum; a coarse grid of `B` for every `C_mid`, then `B` refined
around the best cells. Many curves (bootstrap replicates of one run) in one pass.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.sparse import csr_array
from scipy.special import expit

# Elements of the refinement's (replicates, C_mid candidates, B values, points) sigmoids per block.
REFINE_BLOCK = 2 ** 24


class Sums(NamedTuple):
    """What a grid search needs of R replicates of one curve: log_c (P,) log compute of the
    candidate points; ysum (P, R) the sum of (value - R0) over the records at each point in
    each replicate; count (P, R) how many records sit there; y2 (R,) the sum of squared
    (value - R0). Weighted fits put weights in place of counts."""

    log_c: np.ndarray
    ysum: np.ndarray
    count: np.ndarray
    y2: np.ndarray


class Search(NamedTuple):
    """How one grid search runs: its grid; `a_max` the largest A - R0 (`_a_max`); the float
    type; how many C_mid values (best first) get B refined (None: all); `dense`: the sums have
    few zeros (weighted fits of all points), so the sums over points are dense products."""

    grid: object                  # a `sigmoid.FitGrid` (not imported: sigmoid imports this module)
    a_max: float
    dtype: type = np.float64
    refine_c_mid: int | None = None
    dense: bool = False


class _Candidates(NamedTuple):
    """The coarse search's best cells per replicate (R, K): C_mid index, log B, a, sse."""

    ic: np.ndarray
    log_b: np.ndarray
    a: np.ndarray
    sse: np.ndarray

    def rows(self, rows: slice) -> "_Candidates":
        return _Candidates(*(x[rows] for x in self))


def _grid_fit(sums: Sums, log_cmid, search: Search):
    """Best (a = A - R0, B, C_mid, sse) for R replicates of one curve.

    A coarse grid of B is searched for every C_mid; then, for the
    `search.refine_c_mid` best C_mid values, B alone is refined around its best
    coarse value (the A grid is re-solved at every B). The bootstrap runs this
    in float32, which is accurate enough to rank grid cells.
    """
    R = sums.ysum.shape[1]
    log_b = np.linspace(np.log(search.grid.b_bounds[0]), np.log(search.grid.b_bounds[1]), search.grid.b_points)
    d = sums.log_c[None, :] - log_cmid[:, None]                  # (nC, P)
    best = _coarse(sums, d, log_b, search)

    # Refine B at each candidate C_mid (B alone, as in ScaleRL), level by level, on each
    # replicate's own record points only (padded with zero weights to the widest, L). The
    # replicates are independent, so a block of them at a time gives the same numbers and
    # keeps the (block, K, F, L) sigmoids near REFINE_BLOCK however many points a cell has.
    L = max(int((sums.count.T > 0).sum(axis=1).max()), 1)
    block = max(1, REFINE_BLOCK // (best.ic.shape[1] * max(search.grid.b_refine_points, 1) * L))
    for r0 in range(0, R, block):
        rows = slice(r0, r0 + block)
        part = Sums(sums.log_c, sums.ysum[:, rows], sums.count[:, rows], sums.y2[rows])
        best.log_b[rows], best.a[rows], best.sse[rows] = _refine_b(part, d, log_b, best.rows(rows), L, search)
    k = np.argmin(best.sse, axis=1)
    r = np.arange(R)
    return (best.a[r, k], np.exp(best.log_b[r, k]), np.exp(log_cmid[best.ic[r, k]]),
            np.maximum(best.sse[r, k], 0.0))


def _coarse(sums: Sums, d, log_b, search: Search) -> _Candidates:
    """The coarse grid: every (C_mid, B) cell, the best B per C_mid, and the
    `search.refine_c_mid` best C_mid values per replicate as candidates."""
    P, R = sums.ysum.shape
    nC, nB, dtype = d.shape[0], log_b.size, search.dtype
    # s[p, cell] for every (C_mid, B) cell. Each replicate has few records, so
    # the sums over points are sparse products (and need no BLAS threads,
    # which only contend on a small shared machine).
    s = d.T.astype(dtype)[:, :, None] * np.exp(log_b).astype(dtype)[None, None, :]
    s = expit(s, out=s).reshape(P, -1)                           # (P, nC*nB)
    as_matrix = (lambda m: m.T.astype(dtype)) if search.dense else (lambda m: csr_array(m.T.astype(dtype)))
    ysum_sp, count_sp = as_matrix(sums.ysum), as_matrix(sums.count)
    ssy = (ysum_sp @ s).T                                        # (nC*nB, R)
    np.multiply(s, s, out=s)
    ss2 = (count_sp @ s).T
    del s
    a, sse = _best_a(ssy, ss2, sums.y2.astype(dtype)[None, :], search.grid.a_step, search.a_max)
    sse = sse.reshape(nC, nB, R)
    ib_c = np.argmin(sse, axis=1)                                # best coarse B per C_mid: (nC, R)
    sse_c = np.take_along_axis(sse, ib_c[:, None, :], axis=1)[:, 0, :]
    a_c = np.take_along_axis(a.reshape(nC, nB, R), ib_c[:, None, :], axis=1)[:, 0, :]
    K = nC if search.refine_c_mid is None else max(1, min(int(search.refine_c_mid), nC))
    ic = np.argsort(sse_c, axis=0, kind="stable")[:K].T          # (R, K) candidate C_mid indices
    cols = np.arange(R)[:, None]
    return _Candidates(ic, log_b[ib_c[ic, cols]], a_c[ic, cols].astype(float), sse_c[ic, cols].astype(float))


def _refine_b(sums: Sums, d, log_b, best: _Candidates, L: int, search: Search):
    """`_grid_fit`'s refinement of B for a block of replicates (`sums` and `best` of those
    replicates; d (nC, P) log C - log C_mid); returns the refined (log_b, a, sse)."""
    grid, dtype = search.grid, search.dtype
    has = sums.count.T > 0                                       # (R, P)
    step = log_b[1] - log_b[0] if log_b.size > 1 else 0.0
    m = grid.b_refine_points
    u = np.linspace(-1.0, 1.0, m) if m > 1 else np.zeros(1)
    pidx = np.argsort(~has, axis=1, kind="stable")[:, :L]        # (R, L), records first
    keep = np.take_along_axis(has, pidx, axis=1)
    ysum_t = np.where(keep, np.take_along_axis(sums.ysum.T, pidx, axis=1), 0).astype(dtype)[:, None, :, None]
    count_t = np.where(keep, np.take_along_axis(sums.count.T, pidx, axis=1), 0).astype(dtype)[:, None, :, None]
    d_cand = d[best.ic[:, :, None], pidx[:, None, :]].astype(dtype)  # (R, K, L)
    log_b_best, a_best, sse_best = best.log_b, best.a, best.sse
    for _ in range(grid.b_refine_levels if m > 1 else 0):
        lb = np.clip(log_b_best[:, :, None] + step * u, log_b[0], log_b[-1])   # (R, K, F)
        sf = np.exp(lb).astype(dtype)[:, :, :, None] * d_cand[:, :, None, :]   # (R, K, F, L)
        sf = expit(sf, out=sf)
        ssy_f = np.matmul(sf, ysum_t)[..., 0]
        np.multiply(sf, sf, out=sf)
        ss2_f = np.matmul(sf, count_t)[..., 0]
        a_f, sse_f = _best_a(ssy_f, ss2_f, sums.y2.astype(dtype)[:, None, None], grid.a_step, search.a_max)
        jf = np.argmin(sse_f, axis=2)[..., None]                 # (R, K, 1)
        sse_j = np.take_along_axis(sse_f, jf, axis=2)[..., 0]
        better = sse_j < sse_best
        log_b_best = np.where(better, np.take_along_axis(lb, jf, axis=2)[..., 0], log_b_best)
        a_best = np.where(better, np.take_along_axis(a_f, jf, axis=2)[..., 0], a_best)
        sse_best = np.where(better, sse_j, sse_best)
        step = step * 2 / (m - 1)
    return log_b_best, a_best, sse_best


def _best_a(ssy, ss2, y2, a_step, a_max):
    """SSE is quadratic in a: the best grid value is the nearest to a* = ssy/ss2."""
    a = np.divide(ssy, ss2, out=np.zeros_like(ssy), where=ss2 > 0)
    a *= 1.0 / a_step
    np.rint(a, out=a)
    np.clip(a, 0.0, round(a_max / a_step), out=a)
    a *= a_step
    sse = a * ss2
    np.subtract(2 * ssy, sse, out=sse)
    sse *= a
    np.subtract(y2, sse, out=sse)
    return a, sse


