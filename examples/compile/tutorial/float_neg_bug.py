"""The tutorial's float twin with its injected Inductor accuracy bug: the C++ code generated
for `neg` computes `2 * x`. The compiled result differs from eager and the program's own
assert fails, with torchlint as without; `torchlint run --compile` reports TL710 here.

    torchlint run examples/compile/tutorial/float_neg_bug.py --compile
"""

import torch
import torch._inductor.config
from torch._inductor.codegen import cpp

# The bug, as the tutorial injects it into torch/_inductor/codegen/cpp.py (the vectorised
# form multiplies by a broadcast 2, which compiles). A cached graph compiled before the
# patch would hide it: the cache key does not know about monkeypatches.
cpp.CppOverrides.neg = staticmethod(lambda x: f"decltype({x})(2 * {x})")
cpp.CppVecOverrides.neg = staticmethod(lambda x: f"({x} * decltype({x})(2))")
torch._inductor.config.fx_graph_cache = False


def foo2(x1, x2):
    a = torch.neg(x1)
    b = torch.maximum(x2, a)
    y = torch.cat([b], dim=1)
    return y


torch.manual_seed(0)
x1 = torch.randn((1, 8), dtype=torch.float32)
x2 = torch.randn((8390, 8), dtype=torch.float32)
expected_result = foo2(x1, x2)
compiled_foo2 = torch.compile(foo2)
actual_result = compiled_foo2(x1, x2)
print("float: max abs difference", round(float((expected_result - actual_result).abs().max()), 4))
assert torch.allclose(expected_result, actual_result)
