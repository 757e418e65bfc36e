#!/usr/bin/env bash
# The checks that need a real GPU, in one go (CI has none; run them where a GPU is lent):
# the `gpu`-marked tests (the health probes' examples, syncs timed, out of memory explained,
# Triton kernels mapped to user lines, NCCL itself, the silent training errors on CUDA), then
# the probes' overhead per training step on the GPU. Needs torchlint installed in a Python
# whose torch sees the GPU, and pytest-xdist. Logs go to $OUT (default: the current folder).
set -uo pipefail
out=${OUT:-.}
export PYTHONUNBUFFERED=1
python3 -c "import torch; assert torch.cuda.is_available(), 'no GPU'; print('torch', torch.__version__, torch.cuda.get_device_name())" || exit 2
# The out-of-memory test fills the GPU, so it runs alone, after the others (4 at a time).
timeout 330 python3 -m pytest -m gpu tests/runtime -p no:cacheprovider -q -rs -n 4 -k "not running_out_of_gpu_memory" 2>&1 | tee "$out/gpu-tests.log"
timeout 200 python3 -m pytest -m gpu tests/runtime -p no:cacheprovider -q -rs -k "running_out_of_gpu_memory" 2>&1 | tee -a "$out/gpu-tests.log"
timeout 300 python3 benchmarks/runtime_overhead.py --device cuda --workloads tiny-cnn,cnn,transformer 2>&1 | tee "$out/gpu-overhead.log"
# torch.compile under the probes with Triton kernels, next to the same programs on the CPU.
timeout 400 python3 benchmarks/compile_on_gpu.py -j 6 2>&1 | tee "$out/gpu-compile.log"
