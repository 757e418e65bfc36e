"""The table of removed and deprecated torch functions, shared by TL501 and TL502.

Data only (no libcst): qualified name -> Deprecation. `since` is the torch release that
deprecated the name (a project whose `target-torch` is older is not told about it: the
replacement may not exist there). `removed` is the release that removed it (TL501) or None
(TL502). `safe_fix` is True only where the replacement is exactly equivalent; some of those
are equivalent only for certain call shapes, listed in SAFE_CALL_SHAPES. Every entry was
checked against torch 2.13 (warnings raised, results compared).
"""

from __future__ import annotations

from typing import NamedTuple


class Deprecation(NamedTuple):
    replacement: str
    note: str
    since: str
    safe_fix: bool
    removed: str | None = None


DEPRECATIONS: dict[str, Deprecation] = {
    # -- removed: calling them raises "This function was deprecated since version 1.9 and is now removed"
    "torch.solve": Deprecation(
        "torch.linalg.solve", "its arguments are reversed: solve(B, A) becomes linalg.solve(A, B), which returns only the solution", "1.9", False, "1.13"),
    "torch.symeig": Deprecation(
        "torch.linalg.eigh", "use torch.linalg.eigvalsh when eigenvectors=False; `upper` becomes UPLO", "1.9", False, "1.13"),
    "torch.matrix_rank": Deprecation(
        "torch.linalg.matrix_rank", "`symmetric=True` becomes `hermitian=True`", "1.9", False, "1.13"),
    "torch.lstsq": Deprecation(
        "torch.linalg.lstsq", "its arguments are reversed: lstsq(B, A) becomes linalg.lstsq(A, B).solution", "1.9", False, "1.13"),
    "torch.eig": Deprecation(
        "torch.linalg.eig", "returns complex eigenvalues; use torch.linalg.eigvals for values only", "1.9", False, "2.0"),
    # -- deprecated
    "torch.qr": Deprecation(
        "torch.linalg.qr", "`some=False` becomes mode=\"complete\"", "1.9", True),
    "torch.chain_matmul": Deprecation(
        "torch.linalg.multi_dot", "it takes a list of two or more tensors instead of separate arguments", "1.9", True),
    "torch.cholesky": Deprecation(
        "torch.linalg.cholesky", "`upper=True` becomes torch.linalg.cholesky(A).mH", "1.9", True),
    "torch.ger": Deprecation("torch.outer", "same arguments and result", "1.8", True),
    "torch.lu_solve": Deprecation(
        "torch.linalg.lu_solve", "lu_solve(b, LU, pivots) becomes linalg.lu_solve(LU, pivots, b)", "1.13", False),
    "torch.norm": Deprecation(
        "torch.linalg.vector_norm", "or torch.linalg.matrix_norm / torch.linalg.norm; `p` becomes `ord` and defaults differ for matrices", "1.9", False),
    "torch.range": Deprecation(
        "torch.arange", "arange excludes `end` and returns int64 for integer arguments where range returns float32", "0.4", False),
    "torch.svd": Deprecation(
        "torch.linalg.svd", "it returns Vh, not V, and `some=True` becomes full_matrices=False", "1.9", False),
    "torch.triangular_solve": Deprecation(
        "torch.linalg.solve_triangular", "arguments are reordered and it returns only the solution", "1.11", False),
    "torch.lu": Deprecation(
        "torch.linalg.lu_factor", "or torch.linalg.lu_factor_ex when get_infos=True", "1.13", False),
    "torch.nn.UpsamplingNearest2d": Deprecation(
        "torch.nn.Upsample", "with mode=\"nearest\"", "0.4", False),
    "torch.nn.UpsamplingBilinear2d": Deprecation(
        "torch.nn.Upsample", "with mode=\"bilinear\", align_corners=True", "0.4", False),
    "torch.nn.utils.weight_norm": Deprecation(
        "torch.nn.utils.parametrizations.weight_norm", "parameter names change (weight_g/weight_v become parametrizations.weight.original0/1), so old state dicts need converting", "2.1", False),
    "torch.testing.assert_allclose": Deprecation(
        "torch.testing.assert_close", "default tolerances and equal_nan differ", "1.12", False),
    "torch.utils._pytree._register_pytree_node": Deprecation(
        "torch.utils._pytree.register_pytree_node", "which also registers with the C++ pytree; to_str_fn/maybe_from_str_fn become to_dumpable_context/from_dumpable_context", "2.2", False),
    "torch.backends.cuda.sdp_kernel": Deprecation(
        "torch.nn.attention.sdpa_kernel", "it takes a list of SDPBackend values instead of enable_* flags", "2.3", False),
}

#: Call shapes for which a safe fix is exactly equivalent: (most positional args, allowed keywords).
#: Names with safe_fix=True and not listed here are plain renames for every call.
SAFE_CALL_SHAPES: dict[str, tuple[int, frozenset[str]]] = {
    "torch.qr": (1, frozenset({"input"})),  # some=True (the default) is mode="reduced", the default
    "torch.cholesky": (1, frozenset({"input"})),  # upper=False is the default of both
}


def removed(qualified: str) -> Deprecation | None:
    entry = DEPRECATIONS.get(qualified)
    return entry if entry is not None and entry.removed else None


def deprecated(qualified: str) -> Deprecation | None:
    entry = DEPRECATIONS.get(qualified)
    return entry if entry is not None and not entry.removed else None
