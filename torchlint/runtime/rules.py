"""Codes for what only running shows (TL7xx), documented like any rule.

These rules never match source code: ``torchlint run`` reports them from runtime evidence.
They are registered through the probes plugin's ``torchlint_rules`` hook so that
``torchlint rules`` lists them and ``torchlint rule TL701`` shows their documentation.
They are off for `torchlint check` and marked ``runtime_only``, so the static engine never
parses a file for them, even under ``--select ALL``.
"""

from __future__ import annotations

from torchlint.findings import Severity
from torchlint.rule import Rule

class RuntimeRule(Rule):
    default_enabled = False
    runtime_only = True
    severity = Severity.ERROR


class RuntimeDeviceMismatch(RuntimeRule):
    """
    ## What it does
    Reports an operation that mixed tensors on different devices while the program ran,
    with the line of the operation and the line where the offending tensor was created.

    ## Why is this bad?
    PyTorch's own error names only the line that combines the tensors; the bug is usually
    where one of them was created without `device=` (often in `forward`, so it works on the
    CPU and fails on the first GPU run).

    ## Example
    ```python
    def forward(self, x):
        noise = torch.randn(x.shape)  # created on the CPU
        return x + noise              # x is on cuda:0
    ```

    ## Use instead
    ```python
    def forward(self, x):
        noise = torch.randn(x.shape, device=x.device)
        return x + noise
    ```
    Run `torchlint run train.py --device fake-cuda` to find these on a machine without a GPU.
    """

    code = "TL701"
    name = "runtime-device-mismatch"
    summary = "An operation mixed tensors on different devices at run time"


class TargetCrashed(RuntimeRule):
    """
    ## What it does
    Reports that the program run by `torchlint run` raised an uncaught exception, exited
    with a non-zero status, or was killed by a signal (SIGABRT, SIGSEGV, ...), with the
    evidence the probes gathered before it stopped.

    ## Why is this bad?
    Findings after the crash point could not be checked: they are reported as `not reached`.

    ## Example
    ```python
    loss = model(x)["logits"]  # KeyError
    ```

    ## Use instead
    Fix the error shown in the message (the last lines of the program's output are attached).
    """

    code = "TL702"
    name = "target-crashed"
    summary = "The program raised, exited with an error or died by a signal"


class TargetTimedOut(RuntimeRule):
    """
    ## What it does
    Reports that the program did not finish within `--timeout` seconds, at the user line it
    was running then, with the optimizer steps and forward calls it had made (exact, not the
    last progress report) and its user stack (`evidence.data.stack` in the JSON report). The
    clock starts when `torchlint run` starts, so torchlint's own start counts too; at the
    deadline the program prints where it was and its whole process group is killed. A
    program stuck in C code that holds the interpreter lock is placed from `faulthandler`'s
    dump instead. A program that finished but did not exit (a non-daemon thread still
    running) names the thread and its line.

    ## Why is this bad?
    A training script usually needs only a few steps to show its bugs: the rest of the run
    was not checked.

    ## Example
    ```python
    while True:
        train_one_epoch(model)
    ```

    ## Use instead
    Run it with `--steps N` to stop after N optimizer steps, or raise `--timeout`.
    """

    code = "TL703"
    name = "target-timed-out"
    summary = "The program did not finish within the timeout"


class RuntimeProbabilitiesIntoLoss(RuntimeRule):
    """
    ## What it does
    Reports softmax output (followed through views, indexing and `.to`) reaching
    `cross_entropy` or `nll_loss` at run time where no static finding explains it, backed by a
    check that the values are rows in [0, 1] summing to 1.

    ## Why is this bad?
    `cross_entropy` applies `log_softmax` itself and `nll_loss` expects log-probabilities:
    probabilities train slowly or not at all, without any error.

    ## Example
    ```python
    loss = F.cross_entropy(logits.softmax(1), y)
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(logits, y)
    ```
    """

    code = "TL704"
    name = "runtime-probabilities-into-loss"
    summary = "Softmax output reached cross_entropy or nll_loss at run time"


class RuntimeInplaceOnSavedTensor(RuntimeRule):
    """
    ## What it does
    Reports an in-place operation, at the line that performs it, on a tensor that autograd
    saved for the backward pass, or on a leaf tensor that requires grad, where no static
    finding explains it.

    ## Why is this bad?
    Backward fails with "one of the variables needed for gradient computation has been
    modified by an inplace operation", and `detect_anomaly` points at the op that saved the
    tensor, not at the line that changed it.

    ## Example
    ```python
    h = torch.sigmoid(x)
    h += 1
    ```

    ## Use instead
    ```python
    h = torch.sigmoid(x)
    h = h + 1
    ```
    """

    code = "TL705"
    name = "runtime-inplace-on-saved-tensor"
    summary = "An in-place operation changed a tensor autograd needs, at run time"


class RuntimeCudaCheckpointLoad(RuntimeRule):
    """
    ## What it does
    Reports a `torch.load` without `map_location` that read a checkpoint holding CUDA
    storages, where no static finding explains it (e.g. the call is wrapped). A file the
    same run saved (a best model saved while training and loaded back at the end) is left
    alone, as TL301 leaves such a round trip alone: the load works wherever the save did.

    ## Why is this bad?
    The same call fails on a machine without a GPU ("Attempting to deserialize object on a
    CUDA device").

    ## Example
    ```python
    state = load_fn(path)  # a wrapper around torch.load(path)
    ```

    ## Use instead
    ```python
    state = torch.load(path, map_location="cpu")
    ```
    """

    code = "TL706"
    name = "runtime-cuda-checkpoint-load"
    summary = "A checkpoint holding CUDA storages was loaded without map_location"


class ProbeCrashed(RuntimeRule):
    """
    ## What it does
    Reports that a runtime probe raised an exception of its own. The probe is switched off
    for the rest of the run; the program and the other probes go on.

    ## Why is this bad?
    It is a bug in torchlint or in a third-party probe: please report it.

    ## Example
    ```python
    # nothing in your code: the message names the probe and its error
    ```

    ## Use instead
    Report the message to the probe's authors.
    """

    code = "TL707"
    name = "probe-crashed"
    summary = "A runtime probe raised an exception and was switched off"


class GraphBreak(RuntimeRule):
    """
    ## What it does
    Reports a graph break `torch.compile` (Dynamo) took while compiling the model the program
    ran (`torchlint run --compile`): the user line, PyTorch's reason and hint, the graph-break
    reference id (`GB0170`) when PyTorch gives one, and how many times it happened. The breaks
    are read from Dynamo's structured trace, which sees every one (`torch._dynamo.explain`
    can miss some).

    ## Why is this bad?
    Each break splits the model into separately compiled graphs with Python in between: the
    compiler cannot fuse across it, and a break inside a loop or a hot `forward` can cost most
    of the speed-up.

    ## Example
    ```python
    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:      # data-dependent branch: graph break
            h = h * 2
        return h
    ```

    ## Use instead
    ```python
    def forward(self, x):
        h = self.fc(x)
        return torch.where(h.sum() > 0, h * 2, h)
    ```
    """

    code = "TL708"
    name = "graph-break"
    summary = "torch.compile broke the model's graph at this line"
    severity = Severity.WARNING


class CompileFailure(RuntimeRule):
    """
    ## What it does
    Reports that compiling the model the program ran failed, and which stage failed: the
    backends are tried in order `eager` (Dynamo only), `aot_eager` (plus AOTAutograd) and
    `inductor` (plus code generation, only with `--compile=inductor`), so the first backend
    that fails names the stage: Dynamo, AOTAutograd or Inductor. The finding points at the
    user line in the error when there is one.

    ## Why is this bad?
    `torch.compile(model)` raises on the first call, or falls back to eager silently when
    errors are suppressed, and the traceback is mostly compiler internals.

    ## Example
    ```python
    compiled = torch.compile(model)   # fails inside Inductor on an unsupported op
    ```

    ## Use instead
    Work around the failing operation at the reported line, compile with a backend that
    works (`backend="aot_eager"`), or exclude the function with `torch.compiler.disable`.
    """

    code = "TL709"
    name = "compile-failure"
    summary = "torch.compile failed on the model; the first failing backend names the stage"


class CompiledOutputMismatch(RuntimeRule):
    """
    ## What it does
    Runs the model the program ran on the inputs of its first call, eagerly and compiled (in
    `eval()` mode, with the same random seed), and reports outputs that differ by more than
    a tolerance chosen by dtype (float32: rtol 1e-4, atol 1e-5; float16: 1e-2, 1e-3;
    bfloat16: 1.6e-2, 1e-2; float64: 1e-7, 1e-7). The message gives the largest absolute and
    relative errors and the tolerances used.

    ## Why is this bad?
    A compiled model that computes something else trains or predicts differently with no
    error at all.

    ## Example
    ```python
    def forward(self, x):
        approximate = "tanh" if torch.compiler.is_compiling() else "none"
        return F.gelu(self.fc(x), approximate=approximate)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return F.gelu(self.fc(x))
    ```
    """

    code = "TL710"
    name = "compiled-output-mismatch"
    summary = "The compiled model's output differs from eager beyond the dtype's tolerance"


class Recompilation(RuntimeRule):
    """
    ## What it does
    Reports a function `torch.compile` compiled more than once, with the count and the guard
    that failed (e.g. "tensor 'x' size mismatch at index 0. expected 32, actual 7"). The
    compile probe calls the model with the inputs of its first calls of different shapes, so
    a changing batch size shows up here.

    ## Why is this bad?
    Each recompilation costs the compile time again, and after
    `torch._dynamo.config.recompile_limit` recompilations the function runs eagerly.

    ## Example
    ```python
    for x, y in loader:          # the last batch is smaller
        loss = compiled(x)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=32, drop_last=True)
    # or: torch._dynamo.mark_dynamic(x, 0), or torch.compile(model, dynamic=True)
    ```
    """

    code = "TL711"
    name = "recompilation"
    summary = "torch.compile recompiled a function; the failing guard says why"
    severity = Severity.WARNING


class HotSpot(RuntimeRule):
    """
    ## What it does
    With `torchlint run --profile`, reports the user line that took the largest share of the
    profiled steps (forward plus the backward of its operations), when it took at least 30 %,
    with its time per step, the operations it ran and their input shapes.

    ## Why is this bad?
    It is information, not a bug: the place to look first when the step is slow.

    ## Example
    ```python
    dist = torch.cdist(x, self.centroids)   # 70 % of the step
    ```

    ## Use instead
    Whatever makes that line cheaper; the report's trace.json shows it in Perfetto.
    """

    code = "TL712"
    name = "hot-spot"
    summary = "One line took the largest share of the profiled training steps"
    severity = Severity.INFO


class ImplicitSoftmaxDim(RuntimeRule):
    """
    ## What it does
    Reports a `softmax`, `log_softmax` or `softmin` (functional, method or `nn.Softmax()`)
    called without `dim` while the program ran, at the user line that called it. torch
    warns about it once ("Implicit dimension choice for softmax has been deprecated");
    `torchlint run` turns the warning into a finding even when the program filters warnings.

    ## Why is this bad?
    Without `dim`, torch picks dimension 0 for 0-, 1- and 3-d inputs and dimension 1
    otherwise. A `(batch, seq, classes)` tensor is then normalised over the batch: every
    "probability" depends on the other samples, and the model trains on nonsense without
    an error.

    ## Example
    ```python
    probs = F.softmax(logits)          # logits: (batch, seq, vocab)
    ```

    ## Use instead
    ```python
    probs = F.softmax(logits, dim=-1)
    ```
    """

    code = "TL713"
    name = "implicit-softmax-dim"
    summary = "softmax/log_softmax without dim ran: torch chose the dimension"
    severity = Severity.WARNING


class TensorCopyConstructed(RuntimeRule):
    """
    ## What it does
    Reports `torch.tensor(t)` called on a tensor while the program ran, at the user line
    (torch's warning: "To copy construct from a tensor, it is recommended to use
    sourceTensor.detach().clone()").

    ## Why is this bad?
    `torch.tensor` always copies its data and the copy is cut from the autograd graph: a
    loss built from it sends no gradient back to `t`, silently. It also copies when no copy
    was wanted.

    ## Example
    ```python
    features = torch.tensor(encoder(x))       # no gradient reaches the encoder
    ```

    ## Use instead
    ```python
    features = encoder(x)                      # or x.clone() to keep the gradient,
    snapshot = encoder(x).detach().clone()     # a separate copy on purpose,
    values = torch.as_tensor(array)            # or no copy at all
    ```
    """

    code = "TL714"
    name = "tensor-copy-constructed"
    summary = "torch.tensor() of a tensor ran: a copy cut from the graph"
    severity = Severity.WARNING


class GradOfNonLeaf(RuntimeRule):
    """
    ## What it does
    Reports reading `.grad` of a tensor that is not a leaf of the autograd graph while the
    program ran, at the user line (torch's warning: "The .grad attribute of a Tensor that is
    not a leaf Tensor is being accessed").

    ## Why is this bad?
    Autograd keeps gradients only for leaves (parameters, tensors created with
    `requires_grad=True`): the non-leaf's `.grad` is `None` after `backward()`. Usually the
    tensor was moved or cast after `requires_grad=True` (`torch.randn(3, requires_grad=True)
    .cuda()` is not a leaf), and an optimizer given it never updates anything.

    ## Example
    ```python
    w = torch.randn(3, requires_grad=True).to(device)   # not a leaf: the .to made a copy
    loss = (w * x).sum()
    loss.backward()
    print(w.grad)                                        # None
    ```

    ## Use instead
    ```python
    w = torch.randn(3, device=device, requires_grad=True)
    ```
    or call `w.retain_grad()` before `backward()` when the intermediate's gradient is wanted.
    """

    code = "TL715"
    name = "grad-of-non-leaf"
    summary = ".grad of a tensor that is not a leaf was read: it is None after backward()"
    severity = Severity.WARNING


class LossSizeMismatch(RuntimeRule):
    """
    ## What it does
    Reports a regression loss (`mse_loss`, `l1_loss`, `smooth_l1_loss`, `huber_loss`, ...,
    and their `nn` modules) given an input and a target of different sizes while the program
    ran, at the user line, with both sizes and the shape they broadcast to (torch's warning:
    "Using a target size that is different to the input size").

    ## Why is this bad?
    The two broadcast: an output of size `[N, 1]` against a target of size `[N]` gives an
    `[N, N]` difference, every prediction compared with every target. The loss is a number,
    it goes down a little, and the model learns the mean.

    ## Example
    ```python
    pred = model(x)                  # [N, 1]
    loss = F.mse_loss(pred, y)       # y: [N]
    ```

    ## Use instead
    ```python
    loss = F.mse_loss(pred.squeeze(-1), y)
    ```
    """

    code = "TL716"
    name = "loss-size-mismatch"
    summary = "A loss got input and target of different sizes, which broadcast"


class ShapeError(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` when the program dies of a shape error in a module
    (`mat1 and mat2 shapes cannot be multiplied`, `The size of tensor a (..) must match the
    size of tensor b`, `shape '[..]' is invalid for input of size ..`, a convolution given
    the wrong number of channels, an LSTM's `input.size(-1) must be equal to input_size`).
    In place of the bare crash (TL702), it names the module that failed by its path in the
    model, what that module is, and the shapes it was called with, at the user's line.

    ## Why is this bad?
    torch names the operation, not the layer: `mat1 and mat2 shapes cannot be multiplied
    (64x2048 and 512x10)` does not say which of a model's Linear layers was built for the
    wrong input size, nor what reached it.

    ## Example
    ```python
    self.features = nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
    self.classifier = nn.Linear(512, 10)   # the flattened features have 7200 values
    ```

    ## Use instead
    ```python
    self.classifier = nn.LazyLinear(10)    # or the in_features the report shows
    ```
    """

    code = "TL717"
    name = "shape-error"
    summary = "The program died of a shape error: which module, built for what, given which shapes"


class EmptyParameterList(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` when the program dies of `optimizer got an empty parameter
    list`. It names the models in reach of the failing line that hold no parameters, and
    why: a misspelled `__init__` (`__int__`, `_init_`), which Python never calls, so the
    layers are never built; or layers kept in a plain `list` or `dict`, which `nn.Module`
    does not register (use `nn.ModuleList`/`nn.ModuleDict`).

    ## Why is this bad?
    The error comes from the optimizer, far from its cause, and says nothing about the model.

    ## Example
    ```python
    class Net(nn.Module):
        def __int__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
    ```
    """

    code = "TL718"
    name = "empty-parameter-list"
    summary = "An optimizer got no parameters: the model's `__init__` is misspelled or its layers are unregistered"


class ParameterWithoutGradient(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the gradient-flow probe) when trainable parameters the
    optimizer updates get no gradient, or an all-zero one, at each of the first three
    optimizer steps. They are named by their path in the model (`Net.head.weight`), at the
    line that steps.

    ## Why is this bad?
    Nothing raises: the optimizer skips them and the model trains without them. The usual
    causes are a layer built in `__init__` but never used in `forward`, a graph cut by
    `.detach()`, `.item()` or `torch.tensor(x)`, and `optimizer.zero_grad()` placed between
    `loss.backward()` and `optimizer.step()`, which clears every gradient before the step.

    ## Example
    ```python
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    ```

    ## Use instead
    ```python
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ```
    """

    code = "TL730"
    name = "parameter-without-gradient"
    summary = "Trainable parameters got no gradient at any of the first steps: unused layers or a cut graph"


class ParameterNotUpdated(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the gradient-flow probe) when parameters that have a
    gradient keep exactly their values through each of the first three optimizer steps.

    ## Why is this bad?
    The model does not learn and nothing says so: a learning rate of 0 (a scheduler that
    starts at 0, `lr=args.lr` with the argument unset), or a param group frozen by hand.

    ## Example
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    ```
    """

    code = "TL731"
    name = "parameter-not-updated"
    summary = "Parameters with a gradient kept their values through the first optimizer steps"


class LossNotChanging(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the gradient-flow probe) when the value of the loss that
    `backward()` is called on is exactly the same at each of the first three steps.

    ## Why is this bad?
    The optimizer's updates never reach the loss: the parameters it updates get no
    gradient, the learning rate is 0, or the loss does not depend on the model (a detached
    output, a constant target compared with itself).

    ## Example
    ```python
    loss = criterion(model(x).detach().requires_grad_(), y)
    ```

    ## Use instead
    ```python
    loss = criterion(model(x), y)
    ```
    """

    code = "TL732"
    name = "loss-not-changing"
    summary = "The loss has exactly the same value at each of the first steps"


class SizeOneDimension(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run` (the shapes probe) when a softmax, log-softmax, argmax or
    argmin runs over a dimension of size 1, or a cross-entropy or NLL loss gets one class:
    the op runs, and its result is the same whatever the input. Once per user line, with
    the shape the op got.

    ## Why is this bad?
    `softmax(x, dim=1)` of an `[N, 1]` output is 1 everywhere, `argmax(dim=1)` is 0
    everywhere, and `cross_entropy` over one class is a loss of exactly 0: the model learns
    nothing and its accuracy is whatever the share of class 0 is. Nothing raises. The usual
    cause is a binary classifier with one output unit given a multi-class head.

    ## Example
    ```python
    model = nn.Sequential(nn.Linear(16, 1))
    loss = nn.CrossEntropyLoss()(model(x), y)
    ```

    ## Use instead
    ```python
    model = nn.Sequential(nn.Linear(16, 1))
    loss = nn.BCEWithLogitsLoss()(model(x).squeeze(1), y.float())
    ```
    """

    code = "TL733"
    name = "size-one-dimension"
    summary = "softmax/argmax over a dimension of size 1, or a cross-entropy over one class: a constant result"


class RepeatedHostSync(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --device fake-cuda` (the syncs probe) for a line that
    synchronises the host with the GPU more than once per optimizer step: `.item()`,
    `.cpu()`, `.tolist()`, `.numpy()`, `bool(t)` or printing a tensor inside a per-sample
    loop, or a metric computed element by element. One sync per step (`loss.item()` for
    logging) is the norm and is not reported.

    ## Why is this bad?
    A sync waits until every kernel queued on the GPU has run. Inside a loop it stalls the
    GPU once per element while Python catches up: the step takes as long as the loop, and
    the GPU sits idle.

    ## Example
    ```python
    for i in range(len(target)):
        correct += (predicted[i] == target[i]).item()
    ```

    ## Use instead
    ```python
    correct += (predicted == target).sum()   # a tensor: read it once, after the epoch
    ```
    """

    code = "TL734"
    name = "repeated-host-sync"
    summary = "A line synchronises the host with the GPU more than once per optimizer step"
    severity = Severity.INFO


class CollectiveDivergence(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when the ranks stop calling the same
    collectives in the same order: a collective (or barrier) that only some ranks call, such
    as one inside `if rank == 0:`, or two ranks calling different collectives at the same
    point. Every rank records each `torch.distributed` collective it calls (the operation,
    tensor shapes and dtypes, process group and user line) outside the process group, so the
    first divergence is reported, naming the user line and the ranks on each side, seconds
    after the first rank starts to wait and long before the collective's own timeout.

    ## Why is this bad?
    A collective waits for every rank of its group. When one rank skips it, the others wait
    until the backend's timeout (30 minutes by default, 10 for NCCL) and then die with a
    message that names neither line; or two different collectives pair up and exchange the
    wrong data without any error.

    ## Example
    ```python
    if dist.get_rank() == 0:
        dist.all_reduce(loss)     # rank 1 never gets here
    dist.barrier()
    ```

    ## Use instead
    ```python
    dist.all_reduce(loss)         # every rank takes part
    if dist.get_rank() == 0:
        print(loss.item())
    dist.barrier()
    ```
    """

    code = "TL719"
    name = "collective-divergence"
    summary = "The ranks did not call the same collectives in the same order"


class CollectiveShapeMismatch(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when the ranks call the same collective at
    the same point with tensors of different shapes or dtypes, or with a different source or
    destination rank: each side is named with its ranks, its shapes and its user line.

    ## Why is this bad?
    Depending on the backend the job hangs, aborts in C++ code, or silently reduces
    misaligned memory. A batch whose size depends on the rank (the last, shorter batch of a
    split that is not even) is the usual cause.

    ## Example
    ```python
    stats = torch.zeros(len(local_items))   # a different length on each rank
    dist.all_reduce(stats)
    ```

    ## Use instead
    ```python
    stats = torch.zeros(num_classes)        # the same shape everywhere
    dist.all_reduce(stats)
    ```
    """

    code = "TL720"
    name = "collective-shape-mismatch"
    summary = "The ranks called a collective with different shapes, dtypes or roots"


class ParametersDifferAcrossRanks(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when, right after the first optimizer
    step, a parameter or buffer of the model holds different values on different ranks. Each
    rank sends a cheap digest of every parameter and buffer (its sum and a position-weighted
    sum) out of band, and the report names the tensors that differ and the ranks on each
    side.

    ## Why is this bad?
    Data-parallel training assumes every rank holds the same model. Parameters that differ
    after a step mean the model was initialised differently on each rank (a seed set from
    the rank, weights loaded on one rank only) and nothing synchronised it, or gradients were
    not averaged: the ranks train different models. Buffers that differ are usually
    BatchNorm statistics computed from each rank's own batch (no `SyncBatchNorm`).

    ## Example
    ```python
    torch.manual_seed(rank)        # a different initialisation on every rank
    model = Net()
    for x, y in loader:
        loss_fn(model(x), y).backward()
        average_gradients(model)   # the gradients are averaged, the weights never were
        optimizer.step()
    ```

    ## Use instead
    ```python
    torch.manual_seed(0)           # the same initialisation everywhere
    model = DDP(Net())             # (DDP also broadcasts rank 0's weights at construction)
    ```
    """

    code = "TL721"
    name = "parameters-differ-across-ranks"
    summary = "Model parameters or buffers held different values on different ranks after a step"


class SamplerSameIndicesAcrossRanks(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when a `DistributedSampler` gives every
    rank the same indices: it was built with `num_replicas=1`, or with a fixed `rank=`, so
    each rank trains on the whole dataset instead of its share.

    ## Why is this bad?
    Every rank computes the same gradients: N GPUs do the work of one, an epoch takes N times
    as many samples as intended, and nothing fails.

    ## Example
    ```python
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)   # world size and rank from the process group
    ```
    """

    code = "TL722"
    name = "sampler-same-indices-across-ranks"
    summary = "A DistributedSampler gave every rank the same indices"


class FindUnusedParametersUnneeded(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when a model wrapped in
    `DistributedDataParallel(..., find_unused_parameters=True)` gave a gradient to every
    parameter in every optimizer step the run made (up to the first three): the flag was
    not needed. It confirms the static finding TL807 (`ddp-find-unused-parameters`) when that
    rule reports the same line.

    ## Why is this bad?
    With the flag, DDP walks the autograd graph after every forward pass to find parameters
    that will get no gradient: extra time in every step, for nothing when there are none.

    ## Example
    ```python
    model = DDP(Net(), find_unused_parameters=True)   # every parameter is used
    ```

    ## Use instead
    ```python
    model = DDP(Net())
    ```
    """

    code = "TL723"
    name = "find-unused-parameters-unneeded"
    summary = "DDP's find_unused_parameters=True was not needed: every parameter got a gradient"
    severity = Severity.WARNING


RUNTIME_RULES: dict[str, type[Rule]] = {
    rule.code: rule
    for rule in (
        RuntimeDeviceMismatch,
        TargetCrashed,
        TargetTimedOut,
        RuntimeProbabilitiesIntoLoss,
        RuntimeInplaceOnSavedTensor,
        RuntimeCudaCheckpointLoad,
        ProbeCrashed,
        GraphBreak,
        CompileFailure,
        CompiledOutputMismatch,
        Recompilation,
        HotSpot,
        ImplicitSoftmaxDim,
        TensorCopyConstructed,
        GradOfNonLeaf,
        LossSizeMismatch,
        ShapeError,
        EmptyParameterList,
        ParameterWithoutGradient,
        ParameterNotUpdated,
        LossNotChanging,
        SizeOneDimension,
        RepeatedHostSync,
        CollectiveDivergence,
        CollectiveShapeMismatch,
        ParametersDifferAcrossRanks,
        SamplerSameIndicesAcrossRanks,
        FindUnusedParametersUnneeded,
    )
}
