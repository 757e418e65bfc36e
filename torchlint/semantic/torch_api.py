"""What the semantic model knows about torch's API, by qualified name."""

from __future__ import annotations

from torchlint.semantic.values import EXP, LOGPROB, ONE_HOT, PROB, SAVED, SIGMOID, ZEROS


def _nn(*names: str, modules: tuple[str, ...] = ()) -> frozenset[str]:
    """`torch.nn.X` and the submodule paths it is also reachable through."""
    found = set()
    for name in names:
        found.add(f"torch.nn.{name}")
        found.add(f"torch.nn.modules.{name}")
        found.update(f"torch.nn.modules.{module}.{name}" for module in modules)
    return frozenset(found)


#: Functions whose output has a tracked property.
TENSOR_FUNCTIONS: dict[str, str] = {
    **dict.fromkeys(("torch.nn.functional.softmax", "torch.softmax", "torch.special.softmax", "torch.Tensor.softmax"), PROB),
    **dict.fromkeys(
        ("torch.nn.functional.log_softmax", "torch.log_softmax", "torch.special.log_softmax", "torch.Tensor.log_softmax"),
        LOGPROB,
    ),
    **dict.fromkeys(
        ("torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit", "torch.Tensor.sigmoid"), SIGMOID
    ),
    **dict.fromkeys(("torch.exp", "torch.Tensor.exp"), EXP),
    "torch.nn.functional.one_hot": ONE_HOT,
    **dict.fromkeys(("torch.zeros", "torch.zeros_like"), ZEROS),
    # Other ops whose output autograd saves (checked with torch 2.13: an in-place edit of
    # their output makes backward raise "modified by an inplace operation").
    **dict.fromkeys(
        (
            "torch.relu", "torch.nn.functional.relu", "torch.tanh", "torch.nn.functional.tanh",
            "torch.sqrt", "torch.rsqrt", "torch.reciprocal", "torch.tan", "torch.expm1", "torch.exp2",
        ),
        SAVED,
    ),
}
#: `x.<method>(...)` on a tensor, and the property of its output.
TENSOR_METHODS: dict[str, str] = {
    "softmax": PROB, "log_softmax": LOGPROB, "sigmoid": SIGMOID, "exp": EXP,
    **dict.fromkeys(("relu", "tanh", "sqrt", "rsqrt", "reciprocal", "tan", "expm1", "exp2"), SAVED),
}

#: Layers whose output has a tracked property.
LAYERS: dict[str, str] = {
    **dict.fromkeys(_nn("Softmax", "Softmax2d", modules=("activation",)), PROB),
    **dict.fromkeys(_nn("LogSoftmax", modules=("activation",)), LOGPROB),
    **dict.fromkeys(_nn("Sigmoid", modules=("activation",)), SIGMOID),
    **dict.fromkeys(_nn("ReLU", "Tanh", modules=("activation",)), SAVED),
}

SEQUENTIAL = _nn("Sequential", modules=("container",))
MODULE_LIST = _nn("ModuleList", modules=("container",))
MODULE_DICT = _nn("ModuleDict", modules=("container",))
#: Layers that pass their input's values through unchanged (for the last layer of a Sequential).
IDENTITY_LAYERS = _nn("Dropout", "Identity", "Flatten", "Unflatten", modules=("dropout", "linear", "flatten"))

#: Wrappers whose forward is the wrapped module's forward.
MODULE_WRAPPERS = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.DistributedDataParallel", "torch.compile"}
)

#: Loss functions whose INPUT rules judge, and their kind.
LOSS_FUNCTIONS: dict[str, str] = {
    "torch.nn.functional.cross_entropy": "cross_entropy",
    "torch.nn.functional.nll_loss": "nll",
    "torch.nn.functional.binary_cross_entropy": "bce",
}
LOSS_MODULES: dict[str, str] = {
    **dict.fromkeys(_nn("CrossEntropyLoss", modules=("loss",)), "cross_entropy"),
    **dict.fromkeys(_nn("NLLLoss", "NLLLoss2d", modules=("loss",)), "nll"),
    **dict.fromkeys(_nn("BCELoss", modules=("loss",)), "bce"),
}

#: Methods that keep a tensor's values (shape, dtype, device or autograd changes only), or
#: return the same module.
PASSTHROUGH_METHODS = frozenset(
    {
        "view", "view_as", "reshape", "reshape_as", "flatten", "squeeze", "unsqueeze", "permute",
        "transpose", "contiguous", "to", "float", "double", "half", "bfloat16", "cuda", "cpu",
        "eval", "train", "requires_grad_", "type_as", "expand", "expand_as",
    }
)
#: Methods that keep the values in a new tensor (or one cut from the graph).
COPY_METHODS = frozenset({"clone", "detach"})
#: torch functions that keep their first argument's values.
PASSTHROUGH_FUNCTIONS = frozenset(
    {
        "torch.flatten", "torch.reshape", "torch.squeeze", "torch.unsqueeze", "torch.permute",
        "torch.transpose", "torch.clone", "torch.detach",
    }
)
#: Matrix products: probabilities times a one-hot selector are still probabilities (`Product`).
MATRIX_PRODUCT_FUNCTIONS = frozenset({"torch.bmm", "torch.matmul", "torch.mm"})
MATRIX_PRODUCT_METHODS = frozenset({"bmm", "matmul", "mm"})
#: `x.sum(...)` / `torch.sum(x, ...)`: the denominator of a hand-written softmax.
SUM_FUNCTIONS = frozenset({"torch.sum", "torch.Tensor.sum"})


# -- autograd: leaves, views and layers with parameters (TL103) -----------------------------------
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
#: Factories that make a leaf when called with `requires_grad=True`.
LEAF_FACTORIES = frozenset(
    "torch." + n
    for n in (
        "tensor", "as_tensor", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange",
        "linspace", "logspace", "eye", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
        "randn_like", "randint_like", "normal",
    )
) | {
    # `Variable(data, requires_grad=True)` (deprecated, still in old code) makes a leaf too.
    "torch.autograd.Variable",
    "torch.autograd.variable.Variable",
}
#: Ops returning several views of their input, whose outputs autograd forbids modifying in
#: place (checked with torch 2.13: "Output 0 of Split is a view and is being modified
#: inplace..."). `tensor_split`, `hsplit` and `vsplit` are built from single views and do not
#: raise; they are not listed.
MULTI_OUTPUT_VIEW_METHODS = frozenset({"chunk", "split", "split_with_sizes", "unbind"})
MULTI_OUTPUT_VIEW_FUNCTIONS = frozenset({"torch.chunk", "torch.split", "torch.split_with_sizes", "torch.unbind"})
#: Layers that own parameters by default: their output requires grad, their `weight`/`bias`
#: are leaves that require grad.
PARAMETRIC_LAYERS = _nn(
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "Embedding", "EmbeddingBag", "LSTM", "GRU",
    "RNN", "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention", "LayerNorm", "GroupNorm", "RMSNorm",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "PReLU",
    modules=("linear", "conv", "sparse", "rnn", "activation", "normalization", "batchnorm"),
)
#: Attributes of such a layer that are its parameters.
LAYER_PARAMETERS = frozenset({"weight", "bias"})
#: Tensor methods and attributes returning a view of their receiver that the passthrough lists
#: above do not already follow.
VIEW_ONLY_METHODS = frozenset(
    {"t", "narrow", "select", "diagonal", "movedim", "moveaxis", "swapaxes", "swapdims", "unfold", "as_strided", "unflatten"}
)
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH"})

#: Ops whose output autograd saves beyond those in TENSOR_FUNCTIONS, and the in-place forms,
#: which save (and return) their argument. Checked with torch 2.13: `y = op(x); y.add_(1);
#: y.sum().backward()` raises "modified by an inplace operation" for these and for no
#: look-alike left out (BatchNorm, LayerNorm, GroupNorm, linear, conv, matmul, pooling,
#: dropout, GELU, SiLU, ELU, LeakyReLU, Softplus, log, sin, pow(x, 2), clamp, cumsum, cat,
#: interpolate do not save their output; out-of-place ELU/LeakyReLU/SELU/CELU save their
#: *input*, their in-place forms their output).
SAVED_OUTPUT_FUNCTIONS = frozenset(
    {
        "torch.special.expit", "torch.special.exp2", "torch.special.expm1",
        "torch.nn.functional.softmin", "torch.nn.functional.gumbel_softmax",
        "torch.logsumexp", "torch.special.logsumexp", "torch.logcumsumexp",
        "torch.amax", "torch.amin", "torch.prod", "torch.cumprod",
        "torch.norm", "torch.linalg.norm", "torch.linalg.vector_norm",
        "torch.relu_", "torch.nn.functional.relu_", "torch.sigmoid_", "torch.tanh_", "torch.exp_",
        "torch.exp2_", "torch.expm1_", "torch.sqrt_", "torch.rsqrt_", "torch.reciprocal_", "torch.tan_",
        "torch.nn.functional.elu_", "torch.nn.functional.leaky_relu_", "torch.nn.functional.selu_",
        "torch.nn.functional.celu_", "torch.nn.functional.rrelu_", "torch.selu_", "torch.celu_", "torch.rrelu_",
    }
)
#: Tensor methods, beyond TENSOR_METHODS, whose output autograd saves; they take arguments
#: (`x.amax(-1)`, `x.norm(dim=1)`), and the in-place forms save their receiver.
SAVED_OUTPUT_METHODS = frozenset(
    {
        "logsumexp", "logcumsumexp", "amax", "amin", "prod", "cumprod", "norm",
        "relu_", "sigmoid_", "tanh_", "exp_", "exp2_", "expm1_", "sqrt_", "rsqrt_", "reciprocal_", "tan_",
    }
)
#: Functionals that save their output only in their `inplace=True` form (plain F.relu saves
#: it either way).
SAVED_WHEN_INPLACE_FUNCTIONALS = frozenset({"torch.nn.functional." + n for n in ("relu", "elu", "leaky_relu", "selu", "celu", "rrelu")})
#: Layers that save their output only when built with `inplace=True`, and layers saving it
#: that LAYERS does not list.
SAVED_WHEN_INPLACE_LAYERS = _nn("LeakyReLU", "ELU", "SELU", "CELU", "RReLU", modules=("activation",))
SAVED_OUTPUT_LAYERS = _nn("Softmin", modules=("activation",))
#: Recurrent layers whose output sequence (element 0 of what they return) autograd saves
#: (checked with torch 2.13 on the CPU: `out[:, 0] = 0` after `nn.LSTM` fails backward with
#: "modified by an inplace operation"; after `nn.GRU`, or a bidirectional LSTM, it does not).
#: The hidden states are not.
SAVED_SEQUENCE_LAYERS = _nn("LSTM", modules=("rnn",))
#: Layers taking `inplace`, and its position.
INPLACE_POSITION = {
    **{"torch.nn." + n: 0 for n in ("ReLU", "ReLU6", "SiLU", "Mish", "Hardswish", "Hardsigmoid", "SELU")},
    **{"torch.nn." + n: 1 for n in ("LeakyReLU", "ELU", "CELU", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout")},
    "torch.nn.Hardtanh": 2, "torch.nn.Threshold": 2, "torch.nn.RReLU": 2,
}
#: Methods returning a view when they can and a copy otherwise (a `chunk(2, -1)` piece is not
#: contiguous: `.contiguous()` copies it).
MAY_COPY_METHODS = frozenset({"contiguous", "reshape", "reshape_as", "flatten"})
