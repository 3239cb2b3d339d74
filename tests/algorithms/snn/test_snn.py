"""The SNN library against NumPy transcriptions of the authors' forward, closed forms and
a NumPy hard LIF; the file formats round-trip."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from raystudy.algorithms.snn import (
    SGLIF,
    SNN,
    ConvSNN,
    SigmaLIF,
    SoftLIF,
    UltraDLIF,
    UltraLIF,
    closed_form_t1,
    events_to_frames,
    lse,
    rate_encode,
    surrogate_lif_step,
    ultralif_step,
)
from raystudy.algorithms.snn.data import (
    DataFormatError,
    DataMissingError,
    make_temporal_order,
    read_dvs_gesture,
    read_nmnist,
    read_nmnist_bin,
    read_shd,
    saccade_events,
    write_nmnist,
    write_nmnist_bin,
    write_shd,
)


def np_ultralif(I, eps, tau, theta):  # noqa: N803  the authors' forward, transcribed
    v, out = np.zeros(I.shape[1:]), []
    for It in I:
        a, b = v + np.log(tau), It
        m = np.maximum(a, b)
        vt = m + eps * np.log(np.exp((a - m) / eps) + np.exp((b - m) / eps))
        s = 1 / (1 + np.exp(-(vt - theta) / eps))
        v = vt * (1 - s)
        out.append(s)
    return np.array(out)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("eps,theta", [(1.0, 0.0), (0.3, 1.0), (5.0, 0.5)])
def test_ultralif_step_equals_numpy_transcription(dtype, eps, theta):
    I = np.random.default_rng(0).normal(0, 0.7, (6, 3, 5))  # noqa: E741
    v = torch.zeros(3, 5, dtype=dtype)
    got = []
    for It in torch.tensor(I, dtype=dtype):
        v, s = ultralif_step(v, It, eps, math.log(0.9), theta)
        got.append(s)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    np.testing.assert_allclose(torch.stack(got).numpy(), np_ultralif(I, eps, 0.9, theta),
                               atol=tol)


@pytest.mark.parametrize("theta", [0.0, 1.0])
def test_small_eps_limit_is_memoryless_heaviside_and_tropical_matches(theta):
    I = torch.tensor(np.random.default_rng(1).normal(0, 0.7, (30, 200)), dtype=torch.float64)
    I = I[:, (I - theta).abs().min(0).values > 0.05]  # keep clear of the threshold
    v = torch.zeros(I.shape[1], dtype=torch.float64)
    vt = v.clone()
    for It in I:
        v, s = ultralif_step(v, It, 1e-3, math.log(0.9), theta)
        vt, st = ultralif_step(vt, It, 1e-3, math.log(0.9), theta, mode="tropical")
        h = (It > theta).double()
        assert torch.allclose(s, h, atol=1e-6) and torch.equal(st, h)


def test_constant_subthreshold_input_hard_lif_fires_but_tropical_ultralif_never():
    v = torch.zeros(1, dtype=torch.float64)
    count = 0.0
    for _ in range(20):
        v, s = ultralif_step(v, torch.tensor([0.6], dtype=torch.float64), 1e-3,
                             math.log(0.9), 1.0)
        count += float(s)
    assert count < 1e-6
    vs, hard = torch.zeros(1, dtype=torch.float64), 0.0
    for _ in range(20):
        vs, s = surrogate_lif_step(vs, torch.tensor([0.6], dtype=torch.float64), 0.9, 1.0)
        hard += float(s)
    assert hard == 10


def test_lse_bounds_monotone_and_gradients():
    a = torch.tensor(np.random.default_rng(2).normal(0, 2, (3, 1000)), dtype=torch.float64,
                     requires_grad=True)
    m = a.max(0).values
    for eps in (0.1, 1.0, 5.0):
        out = lse(a, eps)
        assert torch.all(out >= m - 1e-12) and torch.all(out <= m + eps * math.log(3) + 1e-12)
        assert torch.allclose(out, eps * torch.logsumexp(a / eps, 0))
    assert torch.all(lse(a, 2.0) >= lse(a, 1.0))
    (g,) = torch.autograd.grad(lse(a, 0.7).sum(), a)
    assert torch.allclose(g.sum(0), torch.ones(1000, dtype=torch.float64)) and g.min() >= 0
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda z: ultralif_step(z, z * 0.5, 0.7, -0.1, 0.2)[1], (x,))


@pytest.mark.parametrize("eps,theta", [(0.1, 0.0), (0.1, 1.0), (1.0, 0.0), (20.0, 0.5)])
def test_ultralif_step_gradients_are_bounded_and_non_vanishing(eps, theta):
    """``ds/dv`` and ``ds/dI`` of the neuron (autograd) are ``sigmoid'(z)/eps`` times the
    LSE's softmax weights: each in ``[0, 1/(4 eps)]``, together exactly ``sigmoid'(z)/eps``
    (the weights sum to 1), and the bound is reached near the threshold."""
    rng = np.random.default_rng(5)
    v = torch.tensor(rng.normal(0, 2, 4000), dtype=torch.float64, requires_grad=True)
    current = torch.tensor(rng.normal(theta, 2, 4000), dtype=torch.float64, requires_grad=True)
    log_tau = math.log(0.9)
    v_next, s = ultralif_step(v, current, eps, log_tau, theta)
    gv, gi = torch.autograd.grad(s.sum(), (v, current), retain_graph=True)
    bound = 1 / (4 * eps)
    assert gv.min() >= 0 and gi.min() >= 0
    assert gv.max() <= bound + 1e-12 and gi.max() <= bound + 1e-12
    with torch.no_grad():
        vt = eps * torch.logsumexp(torch.stack([v + log_tau, current]) / eps, 0)
        z = (vt - theta) / eps
        ds = torch.sigmoid(z) * (1 - torch.sigmoid(z)) / eps
        w_v = torch.sigmoid((v + log_tau - current) / eps)  # softmax weight of V + log tau
    torch.testing.assert_close(gv + gi, ds, rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(gv, ds * w_v, rtol=1e-10, atol=1e-14)
    assert (gv + gi).max() > 0.9 * bound  # some inputs sit near the threshold
    # the membrane's: |dV/dx| <= w_x (1 - s) + |V~| dS/dx <= 1 + |V~| / (4 eps)
    gvv, gvi = torch.autograd.grad(v_next.sum(), (v, current))
    lim = 1 + vt.abs() / (4 * eps) + 1e-12
    assert torch.all(gvv.abs() <= lim) and torch.all(gvi.abs() <= lim)


def test_t1_network_equals_mlp_with_closed_form_activation():
    torch.manual_seed(0)
    net = SNN(5, 7, 3, lambda n: UltraLIF(n, init_eps=0.8)).double()
    x = torch.randn(8, 5, dtype=torch.float64)
    out = net(x.unsqueeze(0))
    act = closed_form_t1(net.fcs[0](x), 0.8, math.log(0.9))
    assert torch.allclose(out, net.readout(act), atol=1e-12)


def test_t1_conv_network_equals_convs_with_closed_form_activation():
    """ConvSNN at T = 1 is conv -> avg pool -> closed-form activation per block, on the
    C x H x W map its flattened input stands for (odd sizes pool by floor, as torch's)."""
    torch.manual_seed(0)
    net = ConvSNN((2, 9, 7), 3, lambda n: UltraLIF(n, init_eps=0.8),
                  channels=(4, 5)).double()
    x = torch.rand(6, 2 * 9 * 7, dtype=torch.float64)
    out = net(x.unsqueeze(0))
    h, blocks = x.reshape(6, 2, 9, 7), []
    for conv, neuron in zip(net.convs, net.neurons, strict=True):
        pooled = torch.nn.functional.avg_pool2d(conv(h), 2)
        h = closed_form_t1(pooled, neuron.eps(), neuron.log_tau)
        blocks.append(h)
    assert h.shape == (6, 5, 2, 1)
    torch.testing.assert_close(out, net.readout(h.flatten(1)), rtol=0, atol=1e-12)
    # SynOps: block 1's spikes feed 9 x 5 synapses each, block 2's the 3 readout units
    expected = (float(blocks[0].sum()) * 45 + float(blocks[1].sum()) * 3) / 6
    assert net.spike_stats["synops"] == pytest.approx(expected, rel=1e-12)


def test_conv_network_runs_every_neuron_over_time_and_trains():
    torch.manual_seed(1)
    for maker in (lambda n: UltraDLIF(n), lambda n: SGLIF(n), lambda n: SoftLIF(n)):
        net = ConvSNN((1, 8, 8), 10, maker)
        x = torch.rand(4, 3, 64)
        out = net(x)
        assert out.shape == (3, 10) and torch.isfinite(out).all()
        out.sum().backward()
        assert all(p.grad is not None and torch.isfinite(p.grad).all()
                   for p in net.convs.parameters())
    with pytest.raises(ValueError, match="too small"):
        ConvSNN((1, 2, 2), 10, lambda n: SGLIF(n))


def np_hard_lif(I, tau, theta, reset):  # noqa: N803
    v, out = np.zeros(I.shape[1:]), []
    for It in I:
        u = tau * v + It
        s = (u > theta).astype(float)
        v = u * (1 - s) if reset == "zero" else u - s * theta
        out.append(s)
    return np.array(out)


@pytest.mark.parametrize("reset", ["zero", "subtract"])
@pytest.mark.parametrize("surrogate", ["fast_sigmoid", "atan", "sigmoid"])
def test_surrogate_lif_spikes_are_binary_and_match_numpy_hard_lif(reset, surrogate):
    I = np.random.default_rng(3).uniform(0, 0.8, (25, 4, 6))  # noqa: E741
    x = torch.tensor(I, requires_grad=True)
    v, got = torch.zeros(4, 6, dtype=torch.float64), []
    for t in range(25):
        v, s = surrogate_lif_step(v, x[t], 0.9, 1.0, surrogate, 25.0, reset)
        got.append(s)
    S = torch.stack(got)
    assert set(S.detach().unique().tolist()) <= {0.0, 1.0}
    np.testing.assert_array_equal(S.detach().numpy(), np_hard_lif(I, 0.9, 1.0, reset))
    (g,) = torch.autograd.grad(S.sum(), x)
    assert torch.isfinite(g).all() and g.abs().sum() > 0  # the surrogate passes gradient


def test_fast_sigmoid_surrogate_derivative_closed_form():
    u = torch.tensor([-0.2, 0.0, 0.1], dtype=torch.float64, requires_grad=True)
    _, s = surrogate_lif_step(torch.zeros(3, dtype=torch.float64), u + 1.0, 0.9, 1.0)
    (g,) = torch.autograd.grad(s.sum(), u)
    assert torch.allclose(g, 1 / (25 * u.detach().abs() + 1) ** 2)


def test_a_learned_threshold_takes_the_surrogate_gradient_and_a_fixed_one_is_no_parameter():
    """theta learnable: one scalar per layer, init ``threshold``, d s/d theta = -(the
    surrogate's d s/d u); the spikes match the fixed neuron at the same theta. Fixed: no
    parameter, the state dict as before."""
    torch.manual_seed(0)
    current = torch.randn(5, 4, dtype=torch.float64) + 0.5
    learned, fixed = SGLIF(4, threshold=0.5, learn_threshold=True), SGLIF(4, threshold=0.5)
    assert [name for name, _ in learned.named_parameters()] == ["w", "theta"]
    assert list(fixed.state_dict()) == ["w"] and "threshold" not in fixed.scales()
    u = current.clone().requires_grad_(True)
    for neuron in (learned, fixed):
        neuron.reset(5, current)
    s_learned, s_fixed = learned(u), fixed(current)
    assert torch.equal(s_learned.detach().to(s_fixed.dtype), s_fixed)
    (du,) = torch.autograd.grad(s_learned.sum(), u, retain_graph=True)
    (dtheta,) = torch.autograd.grad(s_learned.sum(), learned.theta)
    assert dtheta.item() == pytest.approx(-du.sum().item())
    assert learned.scales()["threshold"] == pytest.approx(0.5)
    # a few Adam steps on a loss that wants fewer spikes move theta up
    opt = torch.optim.Adam([learned.theta], lr=0.05)
    for _ in range(5):
        learned.reset(5, current)
        opt.zero_grad()
        learned(current).sum().backward()
        opt.step()
    assert learned.scales()["threshold"] > 0.5


def test_modes_of_every_neuron_and_dlif_forms():
    torch.manual_seed(0)
    x = torch.randn(5, 4, 16)
    for make in (lambda n: UltraLIF(n), lambda n: UltraDLIF(n),
                 lambda n: UltraDLIF(n, "readme", threshold=1.0),
                 lambda n: SigmaLIF(n), lambda n: SoftLIF(n), lambda n: SGLIF(n)):
        net = SNN(16, 8, 3, make)
        net.set_mode("hard")
        net(x)
        assert net.spike_stats["binary_fraction"] == 1.0
        net.set_mode("soft")
        net(x)
    lib, readme = UltraDLIF(6), UltraDLIF(6, "readme")
    I = torch.randn(2, 6)
    for n in (lib, readme):
        n.reset(2, I)
    s_lib, s_readme = lib(I), readme(I)
    v = 0.9 * 0 + I  # library form, first step from V = 0
    u = 1.0 * torch.logsumexp(torch.stack([v.roll(1, -1), v, v.roll(-1, -1)]), 0)
    assert torch.allclose(s_lib, torch.sigmoid(u), atol=1e-6)
    assert torch.allclose(s_readme, torch.sigmoid(math.log(3) + I), atol=1e-6)
    with pytest.raises(ValueError, match="no readme form"):
        UltraDLIF(4, "readme", learn_tau=True)


def test_rate_encoding_and_event_binning():
    g = torch.Generator().manual_seed(0)
    s = rate_encode(torch.tensor([[-1.0, 0.5, 2.0]]), 4000, generator=g)
    assert s.shape == (4000, 1, 3) and s[:, 0, 0].sum() == 0
    assert abs(float(s[:, 0, 1].mean()) - 0.25) < 0.03
    assert abs(float(s[:, 0, 2].mean()) - 0.5) < 0.03
    f = events_to_frames(np.array([0.0, 0.1, 0.5, 0.99, 1.0]), np.array([0, 1, 1, 2, 2]), 3, 2, 1.0)
    np.testing.assert_array_equal(f, [[1, 1, 0], [0, 1, 2]])


def test_shd_h5_round_trip_and_temporal_order_defeats_counts(tmp_path):
    ev = make_temporal_order(40, classes=4, n_units=16, seed=0)
    write_shd(tmp_path / "shd_train.h5", ev)
    back = read_shd(tmp_path / "shd_train.h5")
    assert back.n_units == 16 and np.array_equal(back.labels, ev.labels)
    for a, b in zip(ev.times, back.times, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    for a, b in zip(ev.units, back.units, strict=True):
        np.testing.assert_array_equal(a, b)
    # pair classes share expected counts per unit; the two halves differ
    big = make_temporal_order(400, classes=2, n_units=8, seed=1)
    c = np.array([events_to_frames(t, u, 8, 1, 1.0)[0] for t, u in
                  zip(big.times, big.units, strict=True)])
    h = np.array([events_to_frames(t, u, 8, 2, 1.0)[0] for t, u in
                  zip(big.times, big.units, strict=True)])
    m0, m1 = c[big.labels == 0].mean(0), c[big.labels == 1].mean(0)
    assert np.abs(m0 - m1).max() < 0.15 * m0.mean()
    assert np.abs(h[big.labels == 0].mean(0) - h[big.labels == 1].mean(0)).max() > 0.5 * m0.mean()
    with pytest.raises(DataMissingError, match="make-events"):
        read_shd(tmp_path / "nope.h5")


def test_nmnist_bin_round_trip(tmp_path):
    rng = np.random.default_rng(4)
    x, y, p = rng.integers(0, 34, 50), rng.integers(0, 34, 50), rng.integers(0, 2, 50)
    t = np.sort(rng.integers(0, 2**23, 50))
    write_nmnist_bin(tmp_path / "a.bin", x, y, p, t)
    for a, b in zip(read_nmnist_bin(tmp_path / "a.bin"), (x, y, p, t), strict=True):
        np.testing.assert_array_equal(a, b)


def test_saccade_digits_written_as_nmnist_read_back(tmp_path):
    images = np.zeros((6, 24, 24))
    for i, im in enumerate(images):  # a bright bar per image, a label per image
        im[4 + 2 * i:8 + 2 * i, 6:18] = 1.0
    labels = np.array([3, 1, 4, 1, 5, 9])
    total = write_nmnist(tmp_path, "Train", images, labels, seed=7, noise=0)
    files = sorted((tmp_path / "Train").glob("*/*.bin"))
    assert len(files) == 6 and {f.parent.name for f in files} == {"1", "3", "4", "5", "9"}
    again = np.random.default_rng(7)  # the same stream, file by file, in index order
    expected = [saccade_events(im, again, noise=0) for im in images]
    back = read_nmnist(tmp_path, "Train")
    order = sorted(range(6), key=lambda i: (str(labels[i]), f"{i:05d}"))  # glob order
    assert sum(len(t) for t in back.times) == total and back.n_units == 2 * 34 * 34
    np.testing.assert_array_equal(back.labels, labels[order])
    for j, i in enumerate(order):
        x, y, p, t = expected[i]
        for a, b in zip(read_nmnist_bin(tmp_path / "Train" / str(labels[i]) / f"{i:05d}.bin"),
                        (x, y, p, t), strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(back.times[j], t / 1e6)
        np.testing.assert_array_equal(back.units[j], p * 34 * 34 + y * 34 + x)
    # a moving edge makes both polarities, in time order, near the bar (amplitude 3, 5 px
    # canvas margin: the bar of image 0 spans rows 9-12, columns 11-22 of the 34 x 34 crop)
    x, y, p, t = expected[0]
    assert set(np.unique(p)) == {0, 1} and np.all(np.diff(t) >= 0)
    assert t.min() >= 0 and t.max() < 300_000
    assert x.min() >= 11 - 1 and x.max() <= 22 + 3 + 1
    assert y.min() >= 9 - 1 and y.max() <= 12 + 3 + 1
    with pytest.raises(DataMissingError, match="Train/0..9"):
        read_nmnist(tmp_path, "Test")


def write_dvs_gesture(root, split, samples):
    """tonic's preprocessed layout, written by numpy.save: ``<label>.npy`` per sample."""
    for i, (label, events) in enumerate(samples):
        folder = root / {"train": "ibmGestureTrain", "test": "ibmGestureTest"}[split]
        (folder / f"user{i:02d}_led").mkdir(parents=True, exist_ok=True)
        np.save(folder / f"user{i:02d}_led" / f"{label}.npy", np.asarray(events))


def test_dvs_gesture_reader_reads_numpy_files_in_tonics_layout(tmp_path):
    a = [[0, 0, 0, 1.0], [127, 5, 1, 2.5], [3, 127, 1, 900.0]]  # x, y, p, t (ms)
    write_dvs_gesture(tmp_path, "train", [(7, a), (0, [[1, 2, 0, 4.0]])])
    ev = read_dvs_gesture(tmp_path, "train")
    assert ev.n_units == 2 * 128 * 128 and sorted(ev.labels.tolist()) == [0, 7]
    i = int(np.flatnonzero(ev.labels == 7)[0])
    np.testing.assert_array_equal(ev.units[i], [0, 128 * 128 + 5 * 128 + 127,
                                                128 * 128 + 127 * 128 + 3])
    np.testing.assert_allclose(ev.times[i], [0.001, 0.0025, 0.9])
    frames = events_to_frames(ev.times[i], ev.units[i], ev.n_units, 2, ev.t_max)
    assert frames.shape == (2, 32768) and frames.sum() == 3
    with pytest.raises(DataMissingError, match="ibmGestureTest"):
        read_dvs_gesture(tmp_path, "test")
    write_dvs_gesture(tmp_path / "bad", "train", [(3, [[0, 0, 0]])])
    with pytest.raises(DataFormatError, match="N x 4"):
        read_dvs_gesture(tmp_path / "bad", "train")
    write_dvs_gesture(tmp_path / "big", "train", [(3, [[128, 0, 0, 1.0]])])
    with pytest.raises(DataFormatError, match="outside"):
        read_dvs_gesture(tmp_path / "big", "train")
    (tmp_path / "bad" / "ibmGestureTrain" / "user00_led" / "3.npy").write_bytes(b"garbage")
    with pytest.raises(DataFormatError, match="not a numeric .npy"):
        read_dvs_gesture(tmp_path / "bad", "train")
    write_dvs_gesture(tmp_path / "label", "train", [(11, a)])
    with pytest.raises(DataFormatError, match="label 0..10"):
        read_dvs_gesture(tmp_path / "label", "train")
