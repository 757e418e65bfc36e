"""The tutorial's bug injected literally in both code generators: `2 * x` does not compile
for a vector of floats, so the program's first call of the compiled function raises
Inductor's C++ compile error. `torchlint run --compile` reports TL709 at that call, with
the compiler's first error line.

    torchlint run examples/compile/tutorial/float_neg_cxx.py --compile
"""

import torch
import torch._inductor.config
from torch._inductor.codegen import cpp

cpp.CppOverrides.neg = staticmethod(lambda x: f"decltype({x})(2 * {x})")
cpp.CppVecOverrides.neg = staticmethod(lambda x: f"decltype({x})(2 * {x})")
torch._inductor.config.fx_graph_cache = False  # a cached graph would hide the patch


def foo2(x1, x2):
    a = torch.neg(x1)
    b = torch.maximum(x2, a)
    y = torch.cat([b], dim=1)
    return y


torch.manual_seed(0)
x1 = torch.randn((1, 8), dtype=torch.float32)
x2 = torch.randn((8390, 8), dtype=torch.float32)
compiled_foo2 = torch.compile(foo2)
actual_result = compiled_foo2(x1, x2)
print("not reached")
