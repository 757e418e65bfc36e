"""`torchlint.runtime.compile.kernel_attribution`: eager and compiled traces on user lines, functions and
kernels, from synthetic traces shaped like torch 2.13's (plain JSON, no torch needed), the
GPU path included."""

from __future__ import annotations

from torchlint.runtime.compile.kernel_attribution import (
    CALL_PREFIX, STACK_PREFIX, Graph, attribute, compare, kernel_lines, kernel_stacks, kernel_stacks_from_nodes,
    SourceFunctions, median_profile, slower_regions, split_calls, transfer_durations,
)

USER = "/proj/model.py"


def user_file(name: str) -> str | None:
    return USER if name.endswith("model.py") else None


def ev(name, ts, dur, cat="cpu_op", tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": args}


def trace(*frames: tuple[int, str]) -> str:
    return "".join(f'  File "{USER}", line {line}, in {func}\n    code\n' for line, func in frames)


def graph(kernels: dict, output_code: str = "", path: str = "/cache/ab/cabc.py") -> Graph:
    g = Graph(graph_id=3, kind="inference", output_code=output_code, output_code_path=path)
    g.kernels = kernel_stacks(kernels, user_file)
    return g


FUSED = graph(
    {"cpp_fused_add_tanh_0:2": [trace((20, "forward"), (3, "act")), trace((20, "forward"), (4, "act")),
                                trace((20, "forward"), (4, "act"))],
     "extern_kernels.addmm:1": [trace((19, "forward"))],
     "extern_kernels.addmm:3": [trace((21, "forward"))]},
    # A graph from Inductor's cache names its ranges after the process that compiled it (graph_0).
    output_code='RAIIAtenRecordFunctionHandle record_("graph_0_cpp_fused_add_tanh_0", nullptr);',
)


def compiled_call(t0: float = 0.0) -> list[dict]:
    return [
        ev(f"{CALL_PREFIX}compiled", t0, 100, cat="user_annotation"),
        ev("Torch-Compiled Region: 0/0", t0 + 1, 98),
        ev("model.py(18): forward", t0 + 2, 96, cat="python_function"),
        ev("## Call CompiledFxGraph fx1 ##", t0 + 5, 90),
        ev("ab/cabc.py(80): call", t0 + 6, 88, cat="python_function"),
        ev("aten::addmm", t0 + 10, 20),
        ev("aten::copy_", t0 + 12, 5),  # inside addmm: not counted twice
        ev("graph_0_cpp_fused_add_tanh_0", t0 + 30, 30),
        ev("aten::addmm", t0 + 60, 10),
    ]


def test_a_fused_kernel_is_shared_among_the_lines_it_fused_and_extern_kernels_go_in_order():
    run = attribute(compiled_call(), graphs=[FUSED], user_file=user_file)
    lines = {line: round(us, 3) for (_, line), us in run.acc.lines.items()}
    # One op from line 3, two from line 4: the kernel's 30 µs split 10 / 20.
    assert lines == {19: 20.0, 21: 10.0, 3: 10.0, 4: 20.0}
    assert run.kernels["0:cpp_fused_add_tanh_0"]["us"] == 30.0
    functions = {func: round(us, 3) for (_, func), us in run.acc.functions.items()}
    assert functions["act"] == 30.0
    # forward: its operations (60 µs); what its compiled region spent outside them (98 - 60), apart.
    assert functions["forward"] == 60.0
    assert round(run.acc.overhead[(USER, "forward")], 3) == 38.0
    assert run.acc.total == 60.0


def test_the_eager_side_uses_the_stacks_of_its_ranges():
    stacks = {0: [(USER, 18, "forward"), (USER, 3, "act")], 1: [(USER, 20, "forward")]}
    events = [ev(f"{STACK_PREFIX}0", 0, 12, cat="user_annotation"), ev("aten::tanh", 1, 10),
              ev(f"{STACK_PREFIX}1", 20, 8, cat="user_annotation"), ev("aten::mul", 21, 6)]
    run = attribute(events, stacks=stacks, user_file=user_file)
    assert dict(run.acc.lines) == {(USER, 3): 10.0, (USER, 20): 6.0}
    assert run.acc.functions[(USER, "forward")] == 16.0 and run.acc.functions[(USER, "act")] == 10.0
    assert run.acc.callees[(USER, "forward")] == {(USER, "act")}


def test_eager_pieces_between_graphs_are_known_by_function_only():
    events = [ev("model.py(30): refine", 0, 50, cat="python_function"), ev("aten::item", 5, 4),
              # Dynamo's resume function after a graph break is the function it resumes
              ev("model.py(31): torch_dynamo_resume_in_refine_at_31", 60, 50, cat="python_function"), ev("aten::abs", 65, 6)]
    run = attribute(events, graphs=[FUSED], user_file=user_file)
    assert not run.acc.lines
    assert run.acc.functions == {(USER, "refine"): 10.0} and (USER, "refine") in run.acc.eager_pieces


def test_gpu_kernels_are_found_by_name_or_through_the_launch_correlation():
    triton = graph({"triton_poi_fused_add_0:1": [trace((5, "forward"))]})
    stacks = {0: [(USER, 9, "forward")]}
    events = [
        # compiled: a Triton kernel Inductor generated, on the device's stream
        ev("## Call CompiledFxGraph g ##", 0, 50), ev("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=7),
        ev("triton_poi_fused_add_0", 100, 40, cat="kernel", tid=7, correlation=7),
        # eager: an ATen kernel, attributed through the launching operation's range
        ev(f"{STACK_PREFIX}0", 200, 30, cat="user_annotation"), ev("aten::mm", 201, 20),
        ev("cudaLaunchKernel", 205, 5, cat="cuda_runtime", correlation=8),
        ev("ampere_sgemm_128x64", 300, 70, cat="kernel", tid=7, correlation=8),
    ]
    run = attribute(events, stacks=stacks, graphs=[triton], user_file=user_file)
    assert run.device == "cuda"
    assert dict(run.acc.lines) == {(USER, 5): 40.0, (USER, 9): 70.0}  # device time, not launch time
    assert run.kernels["0:triton_poi_fused_add_0"]["us"] == 40.0


def test_calls_are_split_and_a_slow_call_moves_no_median():
    events = []
    for index, slow in enumerate((1, 1, 5)):  # the third call ran on a busy machine
        call = compiled_call(t0=1000.0 * index)
        for event in call:
            if not event["name"].startswith(CALL_PREFIX):
                event["dur"] *= slow
        events += call
    runs = split_calls(events)
    assert list(runs) == ["compiled"] and len(runs["compiled"]) == 3
    merged = median_profile([attribute(call, graphs=[FUSED], user_file=user_file) for call in runs["compiled"]])
    assert merged.acc.lines[(USER, 19)] == 20.0 and merged.acc.total == 60.0


def test_each_side_is_scaled_to_its_timed_call_and_the_innermost_slower_function_is_named():
    stacks = {0: [(USER, 18, "forward"), (USER, 3, "act")], 1: [(USER, 18, "forward"), (USER, 19, "helper")]}
    eager = attribute([ev(f"{STACK_PREFIX}0", 0, 40, cat="user_annotation"), ev("aten::tanh", 1, 20),
                       ev(f"{STACK_PREFIX}1", 40, 60, cat="user_annotation"), ev("aten::mm", 41, 40)],
                      stacks=stacks, user_file=user_file)
    slow_act = graph({"cpp_fused_tanh_0:1": [trace((18, "forward"), (3, "act"))],
                      "extern_kernels.mm:2": [trace((18, "forward"), (19, "helper"))]},
                     output_code='("graph_1_cpp_fused_tanh_0"')
    compiled = attribute([ev("## Call CompiledFxGraph g ##", 0, 200), ev("graph_1_cpp_fused_tanh_0", 1, 40),
                          ev("aten::mm", 100, 20)], graphs=[slow_act], user_file=user_file)
    # Profiled, the eager call took twice its timed length: its times are halved.
    result = compare(eager, compiled, eager_ms=0.05, compiled_ms=0.1, eager_scale=0.5)
    act = next(r for r in result["functions"] if r["function"] == "act")
    assert (act["eager_ms"], act["compiled_ms"]) == (0.01, 0.04) and act["speedup"] == 0.25
    mm = next(r for r in result["lines"] if r["line"] == 19)
    assert (mm["eager_ms"], mm["compiled_ms"]) == (0.02, 0.02)  # the same operation: the same time
    slower = slower_regions(result)
    # act and forward are slower; forward only because act is: act is named, and line 3.
    assert [(r["kind"], r.get("function"), r["line"]) for r in slower] == [("function", "act", 3), ("line", "act", 3)]
    assert result["kernels"][0]["name"] == "cpp_fused_tanh_0"
    assert kernel_lines([slow_act], "cpp_fused_tanh_0", 0) == [{"path": USER, "line": 3, "ops": 1}]


def test_this_runs_node_traces_win_over_the_stale_ones_a_cached_graph_carries():
    mapping = {"postToPre": {"add": ["y"], "tanh": ["t"], "addmm": ["h"], "sdpa": ["mm1", "soft", "mm2"]},
               "cppCodeToPost": {"cpp_fused_add_tanh_0:2": ["add", "tanh"],
                                 "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default:3": ["sdpa"]}}
    node_traces = {"y": trace((30, "forward"), (7, "act")), "t": trace((30, "forward"), (8, "act")), "h": "",
                   "mm1": trace((40, "attn")), "soft": trace((41, "attn")), "mm2": trace((43, "attn"))}
    kernels = kernel_stacks_from_nodes(mapping, node_traces, user_file)
    assert {name: [s[-1][1] for s in stacks] for name, stacks in kernels.items()} == {
        "cpp_fused_add_tanh_0": [7, 8],
        # the attention a pattern put in place of matmul, softmax, matmul: each of their lines
        "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default:3": [40, 41, 43]}


def test_functions_are_told_apart_by_qualified_name_and_def_line(tmp_path):
    source = tmp_path / "model.py"
    source.write_text("class A:\n    def forward(self, x):\n        return x + 1\n\n"
                      "class B:\n    @staticmethod\n    def forward(x):\n        f = lambda y: y * 2\n        return f(x)\n")
    function_of = SourceFunctions()
    assert function_of(str(source), 3, "forward") == ("A.forward", 2)
    assert function_of(str(source), 9, "forward") == ("B.forward", 7)
    assert function_of(str(source), 6, "forward") == ("B.forward", 7)  # a profiler frame's first line: the decorator
    assert function_of(str(source), 8, "<lambda>") == ("B.forward.<lambda>", 8)
    assert function_of(str(source), 3, "other") == ("other", None)
    stacks = {0: [(str(source), 3, "forward")], 1: [(str(source), 9, "forward")]}
    run = attribute([ev(f"{STACK_PREFIX}0", 0, 10, cat="user_annotation"), ev("aten::add", 1, 5),
                     ev(f"{STACK_PREFIX}1", 20, 10, cat="user_annotation"), ev("aten::mul", 21, 7)],
                    stacks=stacks, function_of=function_of)
    assert dict(run.acc.functions) == {(str(source), "A.forward"): 5.0, (str(source), "B.forward"): 7.0}
    assert run.acc.first_line[(str(source), "B.forward")] == 7


def test_durations_come_from_the_bare_profile_matched_by_position():
    def call(kind, durations, annotated):
        events = [ev(f"{CALL_PREFIX}{kind}", 0, 1000, cat="user_annotation")]
        t = 1.0
        for name, dur in durations:
            if annotated:
                events.append(ev(f"{STACK_PREFIX}0", t, dur + 10, cat="user_annotation"))
            events.append(ev(name, t + 1, dur))
            events.append(ev("aten::empty", t + 2, 1))  # nested: not a position of its own
            t += dur + 20
        return events

    plain = [call("eager", [("aten::mm", 30), ("aten::tanh", 10)], False),
             call("eager", [("aten::mm", 50), ("aten::tanh", 12)], False),
             call("eager", [("aten::mm", 40), ("aten::tanh", 11)], False)]
    annotated = [call("eager", [("aten::mm", 90), ("aten::tanh", 40)], True)]
    assert transfer_durations(plain, annotated)
    assert [e["_tl_dur"] for e in annotated[0] if e["name"] in ("aten::mm", "aten::tanh")] == [40.0, 11.0]
    run = attribute(annotated[0], stacks={0: [(USER, 5, "forward")]}, user_file=user_file)
    assert run.acc.lines[(USER, 5)] == 51.0  # the bare durations; the nested aten::empty still inside mm
    # Different operations (a data-dependent branch went the other way): nothing is changed.
    other = [call("eager", [("aten::mm", 90), ("aten::relu", 40)], True)]
    assert not transfer_durations(plain, other)
    assert not any("_tl_dur" in e for e in other[0])


def test_a_line_whose_compiled_time_is_an_estimated_share_of_a_fused_kernel_is_not_named():
    stacks = {0: [(USER, 18, "act")], 1: [(USER, 19, "act")]}
    eager = attribute([ev(f"{STACK_PREFIX}0", 0, 20, cat="user_annotation"), ev("aten::mul", 1, 10),
                       ev(f"{STACK_PREFIX}1", 30, 20, cat="user_annotation"), ev("aten::tanh", 31, 10)],
                      stacks=stacks, user_file=user_file)
    both = graph({"cpp_fused_mul_tanh_0:1": [trace((18, "act")), trace((19, "act"))]}, output_code='("graph_0_cpp_fused_mul_tanh_0"')
    compiled = attribute([ev("## Call CompiledFxGraph g ##", 0, 100), ev("graph_0_cpp_fused_mul_tanh_0", 1, 60)],
                         graphs=[both], user_file=user_file)
    result = compare(eager, compiled, eager_ms=0.02, compiled_ms=0.06)
    line = next(r for r in result["lines"] if r["line"] == 18)
    assert (line["compiled_ms"], line["compiled_shared_ms"]) == (0.03, 0.03)  # half of a two-line kernel
    # The function holds the whole kernel: its time is its own, and it is slower.
    assert [(r["kind"], r["line"]) for r in slower_regions(result)] == [("function", 18)]


def test_extern_kernels_and_fallbacks_are_named_as_their_profiler_operations():
    from torchlint.runtime.compile.kernel_attribution import extern_op

    assert extern_op("extern_kernels.addmm:3") == "aten::addmm"
    assert extern_op("torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default:7") == \
        "aten::_scaled_dot_product_flash_attention_for_cpu"
    assert extern_op("aten.convolution.default") == "aten::convolution"
    assert extern_op("mkldnn._linear_pointwise.default:2") == "mkldnn::_linear_pointwise"
    assert extern_op("cpp_fused_add_0:1") is None and extern_op("triton_poi_fused_add_0") is None
