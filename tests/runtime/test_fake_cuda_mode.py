"""The fake-cuda simulation in this process: placement, CUDA's device rules, torch.cuda's answers.

Every test enters and leaves the simulation, and the last one checks that leaving it
restores torch as it was."""

from __future__ import annotations

import io

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from torchlint.runtime.devices.fake_cuda import SimulatedCuda, simulating  # noqa: E402

MISMATCH = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


@pytest.fixture
def sim():
    simulated = SimulatedCuda()
    with simulating(simulated):
        yield simulated


def test_cuda_tensors_report_cuda_and_keep_real_values(sim):
    x = torch.arange(6.0, device="cuda").view(2, 3)
    assert x.device == torch.device("cuda", 0) and x.is_cuda and not x.is_cpu and x.get_device() == 0
    assert x.type() == "torch.cuda.FloatTensor"
    y = (x * 2).sum(1)
    assert y.device.type == "cuda" and y.tolist() == [6.0, 24.0]
    assert repr(torch.tensor([1.0, 2.0], device="cuda")) == "tensor([1., 2.], device='cuda:0')"
    assert repr(torch.tensor(3, device="cuda")) == "tensor(3, device='cuda:0')"
    cpu = x.cpu()
    assert cpu.device.type == "cpu" and not cpu.is_cuda and cpu.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("move", [
    lambda t: t.cuda(), lambda t: t.to("cuda"), lambda t: t.to(torch.device("cuda")), lambda t: t.to("cuda:0"),
    lambda t: t.to(0), lambda t: t.to(device="cuda", dtype=torch.float64), lambda t: torch.zeros_like(t, device="cuda"),
])
def test_every_way_of_placing_on_cuda(sim, move):
    moved = move(torch.ones(3))
    assert moved.device == torch.device("cuda", 0)


def test_default_device_and_generators_on_cuda(sim):
    with torch.device("cuda"):
        assert torch.zeros(2).is_cuda and torch.zeros(2, device="cpu").device.type == "cpu"
    torch.set_default_device("cuda")
    try:
        assert torch.randn(2).device == torch.device("cuda", 0)
    finally:
        torch.set_default_device(None)
    assert torch.zeros(2).device.type == "cpu"
    generator = torch.Generator(device="cuda")
    assert generator.device == torch.device("cuda", 0) and isinstance(generator, torch.Generator)
    assert isinstance(torch.default_generator, torch.Generator)  # made before the simulation
    generator.manual_seed(0)
    first = torch.randn(3, device="cuda", generator=generator).tolist()
    generator.manual_seed(0)
    assert torch.randn(3, device="cuda", generator=generator).tolist() == first


def test_a_move_to_cuda_copies_and_keeps_autograd(sim):
    leaf = torch.ones(3, requires_grad=True)
    moved = leaf.to("cuda")
    assert moved is not leaf and moved.grad_fn is not None and leaf.device.type == "cpu"
    assert moved.cuda() is moved and moved.to("cuda:0") is moved
    (moved * 3).sum().backward()
    assert leaf.grad.tolist() == [3.0, 3.0, 3.0] and leaf.grad.device.type == "cpu"


def test_mixing_cuda_and_cpu_raises_cudas_error(sim):
    x = torch.ones(2, 3, device="cuda")
    for mix in (lambda: x + torch.ones(2, 3), lambda: torch.cat([x, torch.ones(2, 3)]),
                lambda: nn.functional.linear(x, torch.ones(4, 3)), lambda: torch.ones(3) @ x.T):
        with pytest.raises(RuntimeError, match=MISMATCH):
            mix()


def test_an_rnn_with_its_hidden_state_on_the_cpu_raises_cudnns_error(sim):
    lstm = nn.LSTM(4, 8).cuda()
    hidden = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
    with pytest.raises(RuntimeError, match="Input and hidden tensors are not at the same device, found input tensor at cuda:0 "
                                           "and hidden tensor at cpu"):
        lstm(torch.randn(5, 2, 4, device="cuda"), hidden)
    output, _ = lstm(torch.randn(5, 2, 4, device="cuda"), tuple(h.cuda() for h in hidden))
    assert output.is_cuda


def test_packed_sequences_and_ctc_keep_their_sizes_on_the_cpu_as_cuda_wants(sim):
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    lstm = nn.LSTM(4, 8, batch_first=True).cuda()
    packed = pack_padded_sequence(torch.randn(3, 5, 4, device="cuda"), torch.tensor([5, 3, 2]), batch_first=True,
                                  enforce_sorted=False)
    assert packed.data.is_cuda and packed.batch_sizes.device.type == "cpu"
    output, (hidden, _) = lstm(packed)
    padded, lengths = pad_packed_sequence(output, batch_first=True)
    assert padded.is_cuda and hidden.is_cuda and lengths.device.type == "cpu"
    log_probs = torch.randn(6, 3, 5, device="cuda").log_softmax(2)
    targets = torch.randint(1, 5, (3, 2), device="cuda")
    loss = nn.functional.ctc_loss(log_probs, targets, torch.tensor([6, 6, 6]), torch.tensor([2, 2, 2]))
    assert loss.is_cuda
    with pytest.raises(RuntimeError, match=MISMATCH):
        torch.randn(3, device="cuda") + torch.arange(3)  # integer CPU tensors elsewhere still mix


def test_what_cuda_allows_across_devices(sim):
    x = torch.ones(2, 3, device="cuda")
    assert (x * torch.tensor(2.0)).device.type == "cuda"  # a 0-dim CPU tensor is a scalar
    assert (x + 1).sum().item() == 12.0
    x[torch.tensor([0])] = 5.0  # indexing with a CPU index tensor
    x.copy_(torch.zeros(2, 3))  # copies between devices
    assert x.sum().item() == 0.0


def test_two_simulated_devices_do_not_mix():
    with simulating(SimulatedCuda(device_count=2)):
        assert torch.cuda.device_count() == 2 and torch.accelerator.device_count() == 2
        a, b = torch.ones(2, device="cuda:0"), torch.ones(2, device="cuda:1")
        assert b.device == torch.device("cuda", 1) and b.get_device() == 1
        with pytest.raises(RuntimeError, match="cuda:0 and cuda:1!"):
            a + b
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            torch.ones(2, device="cuda:2")
        torch.cuda.set_device(1)
        assert torch.ones(1, device="cuda").device.index == 1 and torch.cuda.current_device() == 1


def test_numpy_raises_as_on_cuda(sim):
    x = torch.ones(2, device="cuda")
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy\. Use Tensor\.cpu\(\)"):
        x.numpy()
    import numpy as np

    with pytest.raises(TypeError, match="can't convert cuda:0"):
        np.asarray(x)
    assert np.asarray(torch.ones(2)).tolist() == [1.0, 1.0]  # CPU tensors stay plain


def test_host_syncs_are_counted(sim):
    heard = []
    sim.syncs.listeners.append(heard.append)  # how a probe counts syncs per line
    x = torch.ones(3, device="cuda")
    torch.ones(3).sum().item()  # a CPU tensor's item is no sync
    assert sim.syncs.total == 0
    x.sum().item()
    x.tolist()
    float(x[0])
    if x[1] > 0:
        pass
    x.cpu()
    torch.cuda.synchronize()
    assert sim.syncs.by_op == {"item": 1, "tolist": 1, "float": 1, "bool": 1, "cpu": 1, "synchronize": 1}
    assert sim.syncs.total == 6 and heard == ["item", "tolist", "float", "bool", "cpu", "synchronize"]


def test_a_module_moved_to_cuda_trains_and_saves_cpu_loadable_weights(sim):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    weight = model[0].weight
    model.cuda()
    assert model[0].weight is weight  # moved in place, as on CUDA
    assert all(p.device.type == "cuda" for p in model.parameters()) and model[1].running_mean.is_cuda
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    x, y = torch.randn(16, 4, device="cuda"), torch.randint(0, 3, (16,), device="cuda")
    losses = []
    for _ in range(5):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all(p.grad.device.type == "cuda" for p in model.parameters())
    assert optimizer.state[weight]["exp_avg"].is_cuda
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, map_location="cpu")
    assert all(t.device.type == "cpu" for t in state.values())
    fresh = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3)).to(torch.device("cuda"))
    fresh.load_state_dict(state)
    assert fresh[0].weight.is_cuda and torch.equal(fresh[0].weight.cpu(), weight.cpu())


def test_checkpoints_remember_cuda_as_a_gpu_run_would(tmp_path):
    from torchlint.runtime.checkpoint_locations import storage_locations

    path = tmp_path / "checkpoint.pt"
    with simulating(SimulatedCuda(device_count=2)):
        model = nn.Linear(3, 2).cuda()
        torch.save({"model": model.state_dict(), "step": torch.tensor(7)}, path)

        def devices(**kwargs):
            loaded = torch.load(path, **kwargs)
            return {str(t.device) for t in loaded["model"].values()}, str(loaded["step"].device)

        assert devices() == ({"cuda:0"}, "cpu")  # where each storage was saved
        assert devices(map_location="cuda:1") == ({"cuda:1"}, "cuda:1")
        assert devices(map_location=torch.device("cuda")) == ({"cuda:0"}, "cuda:0")
        assert devices(map_location="cpu") == ({"cpu"}, "cpu")
        assert devices(map_location={"cuda:0": "cpu"}) == ({"cpu"}, "cpu")
        assert devices(map_location=lambda storage, location: storage.cuda(1)) == ({"cuda:1"}, "cuda:1")
    with path.open("rb") as stream:
        assert storage_locations(stream) == {"cuda:0": 2, "cpu": 1}  # what the checkpoint probe reads
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        torch.load(path)  # the real CPU-only torch, after the simulation
    assert torch.load(path, map_location="cpu")["model"]["weight"].device.type == "cpu"


def test_data_parallel_runs_the_batch_on_its_first_device():
    with simulating(SimulatedCuda(device_count=2)):
        model = nn.DataParallel(nn.Linear(4, 2))
        with pytest.raises(RuntimeError, match=r"parameters and buffers on device cuda:0 \(device_ids\[0\]\)"):
            model(torch.randn(6, 4))  # not moved yet, as on CUDA
        model.cuda()
        out = model(torch.randn(6, 4))
        out.sum().backward()
        assert out.device == torch.device("cuda", 0) and model.module.weight.grad.is_cuda


def test_a_module_moved_to_a_device_index_lands_on_that_gpu():
    # pytorch/examples' DDP tutorial: `model.to(int(os.environ["LOCAL_RANK"]))`. nn.Module.to
    # parses a bare index in C++ as the current accelerator's device, which a CPU build has not
    # got: the run failed where a GPU run does not. And `model.to(device=...)` stayed on the CPU.
    with simulating(SimulatedCuda(device_count=2)):
        model = nn.Linear(4, 2).to(1)
        assert model.weight.device == torch.device("cuda", 1)
        assert nn.Linear(4, 2).to(device=0, dtype=torch.float64).weight.device == torch.device("cuda", 0)
        assert model(torch.randn(3, 4).to(1)).device == torch.device("cuda", 1)
        assert nn.Linear(4, 2).to(device="cuda:1").weight.device == torch.device("cuda", 1)
        assert nn.Linear(4, 2).to(device=torch.device("cpu")).weight.device == torch.device("cpu")


def test_parameters_built_on_cuda_stay_there(sim):
    layer = nn.Linear(3, 2, device="cuda")
    assert layer.weight.is_cuda and isinstance(layer.weight, nn.Parameter)
    assert nn.Parameter(torch.zeros(2, device="cuda")).is_cuda


def test_amp_autocast_and_grad_scaler_run(sim):
    model = nn.Linear(4, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        out = model(torch.randn(8, 4, device="cuda"))
    assert out.dtype == torch.float32  # documented: CUDA autocast is a no-op here
    scaler.scale(out.pow(2).mean()).backward()
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 65536.0


def test_torch_cuda_and_accelerator_report_one_gpu(sim):
    assert torch.cuda.is_available() and torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("cuda")
    assert torch.cuda.device_count() == 1 and torch.cuda.current_device() == 0
    assert "fake-cuda" in torch.cuda.get_device_name(0)
    assert torch.cuda.get_device_properties(0).total_memory == 80 * 1024**3
    assert torch.backends.cudnn.is_available()
    x = torch.ones(1024, device="cuda")
    assert torch.cuda.memory_allocated() >= 4096
    free, total = torch.cuda.mem_get_info()
    assert total - free == torch.cuda.memory_allocated() and torch.cuda.max_memory_allocated() >= 4096
    del x
    assert torch.cuda.memory_allocated() == 0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    assert start.elapsed_time(end) >= 0


def test_legacy_cuda_tensor_types(sim):
    # `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor` (PyTorch-GAN's scripts):
    # the real types need CUDA kernels, and `Variable(t)` makes a new tensor outside any torch call
    import numpy as np
    from torch.autograd import Variable

    Tensor, LongTensor = torch.cuda.FloatTensor, torch.cuda.LongTensor
    ones = Tensor(4, 1).fill_(1.0)
    noise = Variable(Tensor(np.zeros((4, 3))))
    labels = Variable(LongTensor([1, 2, 3, 4]))
    images = torch.zeros(4, 3).type(Tensor)
    for tensor, dtype in ((ones, torch.float32), (noise, torch.float32), (labels, torch.int64), (images, torch.float32)):
        assert tensor.device == torch.device("cuda", 0) and tensor.dtype == dtype
    assert Tensor().shape == (0,) and Tensor(torch.Size([2, 5])).shape == (2, 5)
    assert (ones * noise + images).is_cuda and images.type() == "torch.cuda.FloatTensor"
    assert isinstance(images, Tensor) and not isinstance(images, LongTensor) and not isinstance(torch.zeros(1), Tensor)
    back = images.type(torch.DoubleTensor)
    assert back.device.type == "cpu" and back.dtype == torch.float64
    assert torch.zeros(2).type("torch.cuda.HalfTensor").is_cuda


def test_leaving_the_simulation_restores_torch():
    with simulating(SimulatedCuda()):
        pass
    assert not torch.cuda.is_available() and not torch.accelerator.is_available()
    assert nn.Parameter(torch.zeros(1)).device.type == "cpu"
    assert torch.autograd.Variable(torch.zeros(1)).device.type == "cpu"
    assert torch.cuda.FloatTensor.__module__ == "torch.cuda" and type(torch.cuda.FloatTensor).__name__ == "tensortype"


def test_torch_compile_runs_on_simulated_cuda(sim, caplog):
    # Dynamo saves and restores the CUDA RNG state around each frame once CUDA is available,
    # and must not trace (and recompile) the simulation's own bookkeeping
    model = nn.Linear(4, 2).cuda()
    compiled = torch.compile(model, backend="eager")
    for _ in range(12):
        x = torch.randn(3, 4, device="cuda")
        out = compiled(x)
        assert out.is_cuda and torch.allclose(out.cpu(), model(x).cpu())
    assert "recompile_limit" not in caplog.text
