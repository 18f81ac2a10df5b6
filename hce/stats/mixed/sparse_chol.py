"""Factor ``A = Lambda' Z'Z Lambda + I`` of a mixed model by block elimination, sparsely.

Every row of a mixed model has one level of each random term, so a term's own diagonal
block of ``A`` is block diagonal (one ``q x q`` block per level, ``q`` the term's columns)
and costs nothing to factor. Eliminating such a term leaves a Schur complement on the
other terms; terms nested in a coarser one (``item:prompt`` in ``item``) keep a block
diagonal block in it, so they can be eliminated in turn. :class:`BlockElimination` finds
that order once from the sparsity pattern (the elimination tree of Bates et al. 2015,
sec. 3.7, restricted to whole terms), keeps it across evaluations, and factors what is
left (crossed terms that share rows: lecturers rated by the same students) densely with
LAPACK, or with SuperLU and a fill-reducing ordering computed once when that remainder is
large and sparse.

Why not CHOLMOD: scikit-sparse has no wheel for this Python (it builds against a system
SuiteSparse), and the project installs with one ``pip install``. SciPy has no sparse
Cholesky; SuperLU is an LU that ignores symmetry and is slower than LAPACK on the dense
remainders judge designs leave, so it is used only where density makes dense storage
wasteful.

References
----------
Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear mixed-effects
models using lme4. Journal of Statistical Software, 67(1), 1-48.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import linalg, sparse
from scipy.sparse import linalg as splinalg

from hce.stats._blas import one_blas_thread

_SPARSE_REMAINDER = 3000  # above this size a remainder of low density goes to SuperLU
_SPARSE_DENSITY = 0.05
_ONE_THREAD_FROM = 300  # dense remainders at least this large run on one BLAS thread


@dataclass
class _Stage:
    size: int  # columns eliminated
    block: int  # q: size of each diagonal block
    dinv: sparse.spmatrix | None = None
    w: sparse.csr_matrix | None = None  # C E^-1


class BlockElimination:
    """Block elimination plan for a symmetric positive definite matrix of fixed pattern.

    Parameters
    ----------
    pattern : scipy.sparse matrix
        ``Z'Z`` (or any matrix with the pattern of ``A``), in the original column order.
    groups : list of (ndarray, int)
        For each random term its columns (level-major, ``q`` consecutive columns per
        level) and ``q``.

    Attributes
    ----------
    perm : ndarray
        Column order the factorisation works in: eliminated terms first, in order, then
        the remainder. Build ``A`` in this order (``A[perm][:, perm]``).

    Examples
    --------
    >>> ztz = sparse.csr_matrix(np.array([[2., 0, 1], [0, 1, 1], [1, 1, 2]]))
    >>> plan = BlockElimination(ztz, [(np.array([0, 1]), 1), (np.array([2]), 1)])
    >>> a = ztz + sparse.eye(3)
    >>> bool(np.isclose(plan.factor(a[plan.perm][:, plan.perm]), np.linalg.slogdet(a.toarray())[1]))
    True
    """

    def __init__(self, pattern: sparse.spmatrix, groups: list[tuple[np.ndarray, int]]):
        current = abs(sparse.csr_matrix(pattern, dtype=float))
        current.data[:] = 1.0
        remaining = list(range(len(groups)))
        position = np.arange(current.shape[0])  # original column of each current column
        order, self.stages = [], []
        while remaining:
            index = {col: i for i, col in enumerate(position)}
            candidates = []
            for g in remaining:
                cols = np.array([index[c] for c in groups[g][0]])
                if _block_diagonal(current[cols][:, cols], groups[g][1]):
                    candidates.append((len(cols), g, cols))
            if not candidates:
                break
            _, g, cols = max(candidates, key=lambda c: c[0])
            rest = np.setdiff1d(np.arange(current.shape[0]), cols)
            order.append(position[cols])
            self.stages.append(_Stage(len(cols), groups[g][1]))
            c = current[rest][:, cols]
            current = current[rest][:, rest] + c @ current[cols][:, cols] @ c.T
            current.data[:] = 1.0
            position = position[rest]
            remaining.remove(g)
        order.append(position)
        self.perm = np.concatenate(order).astype(np.int64)
        self.remainder = len(position)
        nnz = current.nnz if self.remainder else 0
        self.sparse_remainder = (
            self.remainder > _SPARSE_REMAINDER and nnz < _SPARSE_DENSITY * self.remainder**2
        )
        if self.sparse_remainder:  # fill-reducing ordering, once
            pattern_lu = splinalg.splu(
                (current + sparse.eye(self.remainder) * self.remainder).tocsc(),
                permc_spec="MMD_AT_PLUS_A",
            )
            self.remainder_perm = pattern_lu.perm_c

    def factor(self, a: sparse.spmatrix) -> float:
        """Factor ``a`` (in :attr:`perm` order); returns ``log|a|``."""
        m = sparse.csr_matrix(a)
        logdet = 0.0
        dense = None
        for n, stage in enumerate(self.stages):
            k = stage.size
            e, c, rest = m[:k, :k], m[k:, :k], m[k:, k:]
            stage.dinv, logdet_e = _block_inverse(e, stage.block)
            logdet += logdet_e
            stage.w = (c @ stage.dinv).tocsr()
            if n == len(self.stages) - 1 and self.remainder and not self.sparse_remainder:
                dense = rest.toarray()
                dense -= (stage.w @ c.T).toarray()  # straight to the dense remainder
            else:
                m = (rest - stage.w @ c.T).tocsr()
        if self.remainder:
            if self.sparse_remainder:
                p = self.remainder_perm
                self._lu = splinalg.splu(
                    m[p][:, p].tocsc(),
                    permc_spec="NATURAL",
                    diag_pivot_thresh=0.0,
                    options={"SymmetricMode": True},
                )
                logdet += float(np.sum(np.log(np.abs(self._lu.U.diagonal()))))
            else:
                dense = m.toarray() if dense is None else dense
                # one BLAS thread: a remainder of a few thousand gains little from more, and
                # on a busy machine oversubscribed OpenBLAS threads were 20x slower
                if self.remainder >= _ONE_THREAD_FROM:
                    with one_blas_thread():
                        self._chol = linalg.cho_factor(dense, lower=True, overwrite_a=True)
                else:
                    self._chol = linalg.cho_factor(dense, lower=True, overwrite_a=True)
                logdet += 2.0 * float(np.sum(np.log(np.diag(self._chol[0]))))
        return logdet

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``a^-1 rhs`` for the last factored ``a`` (vector or matrix, :attr:`perm` order)."""
        return _substitute(rhs, [(s.dinv, s.w) for s in self.stages], self._solve_remainder if self.remainder else None)

    def _solve_remainder(self, r: np.ndarray) -> np.ndarray:
        if not self.sparse_remainder:
            return linalg.cho_solve(self._chol, r, check_finite=False)
        p = self.remainder_perm
        x = np.empty_like(r)
        x[p] = self._lu.solve(np.ascontiguousarray(r[p]))
        return x


def _substitute(rhs: np.ndarray, stages: list, solve_remainder) -> np.ndarray:
    """``A^-1 rhs`` from block elimination: forward through the stages (each its ``D^-1``
    and ``W = C D^-1``), the remainder's solve (None: no remainder), and back."""
    r = np.asarray(rhs, dtype=float)
    vector = r.ndim == 1
    r = r[:, None] if vector else r
    heads = []
    for dinv, w in stages:
        head, r = r[: dinv.shape[0]], r[dinv.shape[0] :]
        heads.append(head)
        r = r - w @ head
    x = r if solve_remainder is None else solve_remainder(r)
    for (dinv, w), head in zip(reversed(stages), reversed(heads)):
        x = np.vstack([dinv @ head - w.T @ x, x])
    return x[:, 0] if vector else x


class ScalarElimination:
    """:class:`BlockElimination` for one fixed pattern whose terms are all scalar (``q = 1``).

    Why: the general :meth:`BlockElimination.factor` slices and multiplies ``scipy.sparse``
    matrices at every evaluation, and that overhead was most of a fit's time at 50,000
    columns (10,000 items x 4 conditions: about 5 ms a factorisation, thousands of them
    for a profile interval). With 1 x 1 blocks and a fixed pattern each Schur complement
    ``rest - C D^-1 C'`` is one scatter-add of products whose positions are found here,
    once; the numbers are the same (the same eliminations in the same order).

    Parameters
    ----------
    plan : BlockElimination
        Its stages must all have ``block == 1`` and its remainder must be dense.
    rows, cols : ndarray of int
        The stored entries of ``A``'s lower triangle (diagonal included) in
        :attr:`BlockElimination.perm` order; :meth:`factor` takes their values in this
        order. The lower triangle alone halves the work: ``A`` is symmetric and LAPACK's
        Cholesky reads one triangle.

    Examples
    --------
    >>> ztz = sparse.csr_matrix(np.array([[2., 0, 1], [0, 1, 1], [1, 1, 2]]))
    >>> plan = BlockElimination(ztz, [(np.array([0, 1]), 1), (np.array([2]), 1)])
    >>> a = (ztz + sparse.eye(3)).toarray()[plan.perm][:, plan.perm]
    >>> rows, cols = np.nonzero(np.tril(a))
    >>> fast = ScalarElimination(plan, rows, cols)
    >>> bool(np.isclose(fast.factor(a[rows, cols]), np.linalg.slogdet(a)[1]))
    True
    >>> bool(np.allclose(a @ fast.solve(np.ones(3)), 1.0))
    True
    """

    def __init__(self, plan: BlockElimination, rows: np.ndarray, cols: np.ndarray):
        if plan.sparse_remainder or any(stage.block != 1 for stage in plan.stages):
            raise ValueError("ScalarElimination needs 1 x 1 blocks and a dense remainder")
        n = len(plan.perm)
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        self._steps = []
        for stage in plan.stages:
            k, size = stage.size, n
            n -= k
            diagonal = np.empty(k, dtype=np.int64)
            on_diagonal = (rows < k) & (rows == cols)
            diagonal[rows[on_diagonal]] = np.flatnonzero(on_diagonal)
            # C's entries (rows below the block, columns in it), grouped by column
            in_c = np.flatnonzero((rows >= k) & (cols < k))
            in_c = in_c[np.argsort(cols[in_c], kind="stable")]
            c_row, c_col = rows[in_c] - k, cols[in_c]
            counts = np.bincount(c_col, minlength=k)
            # every pair (a, b) of C's entries in one column updates rest[row_a, row_b]
            # (lower triangle: row_a >= row_b). Within a column the entries keep the pattern's
            # ascending rows, so the pairs are entry a with the column's entries up to a itself
            start = (np.cumsum(counts) - counts)[c_col]
            per = np.arange(len(in_c)) - start + 1  # a's place in its column, from 1
            first = np.repeat(np.arange(len(in_c)), per)
            offset = np.cumsum(per) - per
            second = np.arange(len(first)) - np.repeat(offset - start, per)
            rest = np.flatnonzero((rows >= k) & (cols >= k))
            keys = np.concatenate([(rows[rest] - k) * n + cols[rest] - k, c_row[first] * n + c_row[second]])
            unique, target = _unique_keys(keys, n * n)
            by_row = np.lexsort((c_col, c_row))
            w_pattern = (c_col[by_row], np.searchsorted(c_row[by_row], np.arange(n + 1)), by_row)
            target_rest, target_pairs = target[: len(rest)], target[len(rest) :]
            self._steps.append((k, diagonal, in_c, c_col, rest, first, second, (target_rest, target_pairs), len(unique), w_pattern, size))
            rows, cols = unique // n, unique % n
        self._remainder = n
        self._flat = rows * n + cols
        self._inverse: list[tuple[np.ndarray, sparse.csr_matrix]] = []

    def factor(self, values: np.ndarray) -> float:
        """Factor ``A`` with these values (``pattern.data`` order); returns ``log|A|``."""
        logdet, self._inverse, self._pivots = 0.0, [], []
        for k, diagonal, in_c, c_col, rest, first, second, target, nnz, w_pattern, size in self._steps:
            d = values[diagonal]
            logdet += float(np.sum(np.log(d)))
            c = values[in_c]
            w = c / d[c_col]  # C D^-1
            self._pivots.append((d, w))
            # rest - C D^-1 C': the pairs' products summed, then the remainder's own entries
            # (fewer arrays of the pairs' length: they are most of a large fit's memory traffic)
            target_rest, target_pairs = target
            products = w[first]
            products *= c[second]
            # (float: with no pairs NumPy's bincount returns integers)
            update = np.bincount(target_pairs, weights=products, minlength=nnz).astype(float, copy=False)
            np.negative(update, out=update)
            update[target_rest] += values[rest]
            values = update
            indices, indptr, order = w_pattern
            self._inverse.append((sparse.diags(1.0 / d), sparse.csr_matrix((w[order], indices, indptr), shape=(size - k, k))))
        if self._remainder:
            dense = np.zeros(self._remainder**2)
            dense[self._flat] = values
            dense = dense.reshape(self._remainder, self._remainder)
            self._chol = linalg.cho_factor(dense, lower=True, overwrite_a=True)
            logdet += 2.0 * float(np.sum(np.log(np.diag(self._chol[0]))))
        return logdet

    @property
    def has_inverse_diagonal(self) -> bool:
        """Whether :meth:`inverse_diagonal` can work (always: kept for the callers' test)."""
        return True

    def inverse_diagonal(self) -> np.ndarray:
        """The diagonal of ``A^-1`` for the last factored ``A``, in :attr:`BlockElimination.perm` order.

        Selected inversion (Takahashi, Fagan & Chen 1973; Erisman & Tinney 1975), stage by
        stage from the last: with a stage's ``A = [[D, C'], [C, R]]``, ``S = R - C D^-1 C'``
        (the next stage's matrix) and ``W = C D^-1``, ``A^-1 = [[D^-1 + W' S^-1 W, -W' S^-1],
        [-S^-1 W, S^-1]]``. ``S^-1`` is needed only on ``S``'s own pattern, which holds every
        pair of rows of a column of ``C`` (the Schur complement's fill), and ``S^-1 W``'s
        entries on ``C``'s pattern come from those pairs: so ``A^-1`` on ``A``'s pattern follows
        from ``S^-1`` on ``S``'s, down to the dense remainder (one LAPACK ``potri``, about two
        factorisations). The cost is the pairs the elimination already visits, about one
        factorisation more: the gradient of the profiled deviance (``tr A^-1`` per term) then
        costs about three evaluations whatever the number of stages, where finite differences
        cost two per parameter and lose digits on a deviance of 1e8.
        """
        n = self._remainder
        if n:
            s_inv, info = linalg.lapack.dpotri(self._chol[0], lower=True)
            if info != 0:
                raise linalg.LinAlgError(f"potri failed ({info})")
            z = s_inv.ravel()[self._flat]  # the remainder's pattern (lower triangle)
            diagonals = [np.diag(s_inv).copy()]
        else:
            z, diagonals = np.empty(0), [np.empty(0)]
        for step, (d, w) in zip(reversed(self._steps), reversed(self._pivots)):
            k, diagonal, in_c, c_col, rest, first, second, target, nnz, _, _ = step
            pair = z[target[1]]  # S^-1 at each pair of rows of one column of C (target: the rest's, the pairs')
            # y = S^-1 W on C's pattern; an off-diagonal pair (a, b) adds to both a's and b's sum
            y = np.bincount(first, weights=pair * w[second], minlength=len(in_c))
            off = first != second
            y += np.bincount(second[off], weights=pair[off] * w[first[off]], minlength=len(in_c))
            head = 1.0 / d + np.bincount(c_col, weights=w * y, minlength=k)
            diagonals.append(head)
            previous = np.empty(len(diagonal) + len(in_c) + len(rest))
            previous[diagonal], previous[in_c], previous[rest] = head, -y, z[target[0]]
            z = previous
        return np.concatenate(diagonals[::-1])

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``A^-1 rhs`` for the last factored ``A`` (vector or matrix)."""
        solve_remainder = partial(linalg.cho_solve, self._chol, check_finite=False) if self._remainder else None
        return _substitute(rhs, self._inverse, solve_remainder)


_MARKED_UP_TO = 1 << 23  # key ranges marked in tables (at most 8 MB of flags, 32 MB of positions)


def _unique_keys(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for keys in ``[0, size)``.

    Why: the Schur pairs of a large fit are millions of keys (1.8M on InstEval), and sorting
    them was half of a fit's setup; a remainder small enough to be factored dense has a key
    range (the remainder's n^2) that a table of flags covers, found in one pass.
    """
    if size > _MARKED_UP_TO:
        return np.unique(keys, return_inverse=True)
    marked = np.zeros(size, dtype=bool)
    marked[keys] = True
    unique = np.flatnonzero(marked)
    position = np.empty(size, dtype=np.int32)
    position[unique] = np.arange(len(unique), dtype=np.int32)
    return unique, position[keys].astype(np.int64)


def _block_diagonal(block: sparse.spmatrix, q: int) -> bool:
    """Whether the pattern has non-zeros only inside the ``q x q`` diagonal blocks."""
    coo = block.tocoo()
    return bool(np.all(coo.row // q == coo.col // q))


def _block_inverse(e: sparse.spmatrix, q: int):
    """Inverse of a block-diagonal matrix as a sparse matrix, and its log determinant."""
    if q == 1:
        d = e.diagonal()
        return sparse.diags(1.0 / d), float(np.sum(np.log(d)))
    coo = e.tocoo()
    blocks = np.zeros((e.shape[0] // q, q, q))
    blocks[coo.row // q, coo.row % q, coo.col % q] = coo.data
    chol = np.linalg.cholesky(blocks)
    logdet = 2.0 * float(np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2))))
    inv = np.linalg.inv(blocks)
    n = len(blocks)
    return sparse.bsr_matrix((inv, np.arange(n), np.arange(n + 1)), shape=e.shape).tocsr(), logdet
