"""The report's quantities from hand-made runs: paired gains, CTS, verdicts, gaps."""

from __future__ import annotations

import math

import pytest

from raystudy.algorithms.graph_transfer import gains
from raystudy.algorithms.graph_transfer.cts import CTS_LABEL
from raystudy.studies.graph_transfer.summary import build

HOMOPHILY = {"a": 0.1, "b": 0.5, "c": 0.9}


def runs(drop: tuple = ()) -> dict:
    """NC->LP warm start gains 0.2 * (h - 0.5) exactly; LP->NC a flat -0.05; one backbone."""
    out = {}
    for d, h in HOMOPHILY.items():
        stats = {f"stats/{s}": v for s, v in {"edge_homophily": h, "node_homophily": h,
                                               "mean_degree": 8.0, "density": 0.02,
                                               "feature_signal": 0.3}.items()}
        for seed in (0, 1):
            nc, lp = 0.6 + 0.01 * seed, 0.7 + 0.01 * seed
            cells = {"nc": {"nc_acc": nc}, "lp": {"lp_auc": lp},
                     "warm_nc_lp": {"lp_auc": lp + 0.2 * (h - 0.5)},
                     "warm_lp_nc": {"nc_acc": nc - 0.05},
                     "joint_uw": {"nc_acc": nc, "lp_auc": lp - 0.1, "nc_chance": 0.25}}
            for mech, metrics in cells.items():
                for protocol in ("leakage_free", "randomlinksplit"):
                    if (protocol, d, mech) in drop or (protocol == "randomlinksplit"
                                                      and mech == "joint_uw"):
                        continue
                    bump = 0.05 if protocol == "randomlinksplit" and mech == "warm_nc_lp" else 0
                    m = {k: v + (bump if k == "lp_auc" else 0) for k, v in metrics.items()}
                    out[(protocol, d, "gcn", mech, seed)] = {**m, **stats}
    return out


def test_paired_gains_by_hand():
    g = gains.paired_gains(runs(), "leakage_free")
    assert g[("c", "gcn", "warm_nc_lp")] == {0: pytest.approx(0.08), 1: pytest.approx(0.08)}
    assert g[("a", "gcn", "warm_lp_nc")][1] == pytest.approx(-0.05)
    assert g[("b", "gcn", "joint_uw:lp")][0] == pytest.approx(-0.1)
    assert g[("b", "gcn", "joint_uw:nc")][0] == pytest.approx(0.0)


def test_cts_by_hand():
    cts = gains.cts_by_seed(runs(), "leakage_free")
    # seed 0: r_NC = 1, r_LP = (0.6 - 0.5) / (0.7 - 0.5) = 0.5 -> HM = 2 * 0.5 / 1.5
    assert cts[("a", "gcn", "joint_uw")][0] == pytest.approx(2 / 3)


def test_report_says_what_the_runs_show(tmp_path):
    out = build(runs(), tmp_path)
    assert out["summary"]["verdict_nc_to_lp"].startswith("NC->LP (warm start) helps more as "
                                                         "homophily rises (slope +0.200")
    assert "n=3 datasets (6 runs)" in out["summary"]["verdict_nc_to_lp"]
    fit = out["fits"]["warm_nc_lp"]
    assert fit.clusters == 3 and fit.observations == 6 and fit.slope == pytest.approx(0.2)
    assert any("LP->NC (warm start): no clear trend" in n for n in out["notes"])
    assert out["summary"]["leaky_minus_free_nc_to_lp_gain"] == pytest.approx(0.05)
    lodo = out["summary"]["recommendation"]["gcn|lp"]["lodo"]
    assert lodo["n"] == 3 and 0 <= lodo["accuracy"] <= 1
    titles = [t["title"] for t in out["tables"]]
    cts = next(t for t in out["tables"] if t["title"].startswith("CoTask Score"))
    assert "raystudy's definition" in cts["title"] and "gives no formula" in cts["note"]
    assert out["summary"]["cts_definition"] == CTS_LABEL
    assert any("raystudy's definition" in title for title, _ in out["figures"])
    assert any(t.startswith("Leakage-free vs RandomLinkSplit") for t in titles)
    for name in ("gain_heatmaps.png", "gain_vs_homophily.png", "cts.png", "protocols.png"):
        assert (tmp_path / name).stat().st_size > 10_000


def test_a_missing_baseline_leaves_a_gap_not_an_error(tmp_path):
    out = build(runs(drop=(("leakage_free", "b", "lp"),)), tmp_path)
    g = out["summary"]["gains"]
    assert "b|gcn|warm_nc_lp" not in g and "c|gcn|warm_nc_lp" in g
    assert math.isfinite(g["c|gcn|warm_nc_lp"]["mean"])
    assert build({}, tmp_path)["notes"] == ["no finished trials yet"]


def test_homophily_slope_is_clustered_by_dataset():
    """Seeds of one dataset are one point: the interval comes from 3 dataset means on 1 df,
    not from 12 runs; the pooled-runs interval would be far narrower."""
    from scipy import stats as sps

    g, h, x, y = {}, {}, [], []
    for d, hd, noise in (("a", 0.1, 0.03), ("b", 0.5, -0.04), ("c", 0.9, 0.02)):
        h[d] = {"edge_homophily": hd}
        for bb in ("gcn", "sage"):
            g[(d, bb, "warm_nc_lp")] = {0: 0.1 * hd + noise, 1: 0.1 * hd + noise + 0.001}
            x += [hd, hd]
            y += [0.1 * hd + noise, 0.1 * hd + noise + 0.001]
    fit = gains.homophily_fit(g, h, "warm_nc_lp")
    ref = sps.linregress([0.1, 0.5, 0.9], [0.1 * 0.1 + 0.0305, 0.05 - 0.0395, 0.09 + 0.0205])
    assert fit.clusters == 3 and fit.observations == 12
    assert fit.slope == pytest.approx(ref.slope) and fit.p_value == pytest.approx(ref.pvalue)
    pooled = sps.linregress(x, y)
    assert fit.ci_high - fit.ci_low > 5 * 2 * sps.t.ppf(0.975, 10) * pooled.stderr
    assert gains.homophily_trend(g, h, "warm_nc_lp")["n"] == 3
