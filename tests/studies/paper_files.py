"""Small data files in the formats the paper profiles read on a cluster, written the way
their real producers write them (numpy, anndata, h5py in D4RL's layout, Minari's API,
geom-gcn's text files), for tests/studies/test_paper_profiles.py.

Writers that other tests already have are imported from them: MNIST's IDX files
(tests/algorithms/plasticity), Planetoid, Airports and roman-empire raw files
(tests/algorithms/graph_transfer) and LCBench's JSON (tests/studies/test_empirical_gp.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1]
for _folder in (TESTS / "algorithms", TESTS / "algorithms" / "graph_transfer"):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

from plasticity.test_image_data import fake_mnist  # noqa: E402, F401  (re-exported)
from raw_fixtures import write_raw  # noqa: E402, F401  (Planetoid, Airports, heterophilous)
from test_empirical_gp import write_lcbench  # noqa: E402, F401

GPT2_VOCAB = 50257


def write_tokens(folder: Path, seq_len: int, rows: int = 64) -> Path:
    """train.npy / val.npy: uint16 GPT-2 token ids, ``rows`` x (seq_len + 1) for training."""
    from raystudy.algorithms.text import write_token_files

    ids = np.random.default_rng(0).integers(0, GPT2_VOCAB, size=int(rows * 1.15) * (seq_len + 1))
    return write_token_files(folder, ids, seq_len)


def write_tahoe_plates(folder: Path, plates: int = 3, cells: int = 160, genes: int = 48) -> int:
    """Tahoe-100M-like plate files written by anndata itself: CSR counts (float32), obs with
    Tahoe's categorical ``cell_line`` / ``plate`` among its other columns, each plate with its
    own subset (and order) of the cell lines. Returns the total number of cells."""
    import anndata
    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    lines = [f"CVCL_{i:04d}" for i in range(6)]
    var = pd.DataFrame({"gene_id": [f"ENSG{g:011d}" for g in range(genes)]},
                       index=[f"GENE{g}" for g in range(genes)])
    folder.mkdir(parents=True, exist_ok=True)
    for p in range(plates):
        x = sp.random(cells, genes, density=0.1, format="csr", random_state=p, dtype=np.float32)
        x.data = np.ceil(10 * x.data)
        obs = pd.DataFrame({
            "sample": pd.Categorical([f"smp_{p}"] * cells),
            "gene_count": rng.integers(1, genes, cells),
            "drug": pd.Categorical(rng.choice(["DMSO_TF", "Afatinib"], cells)),
            "cell_line": pd.Categorical(rng.choice(lines[p:p + 4], cells)),
            "plate": pd.Categorical([f"plate{p + 1}"] * cells),
            "pcnt_mito": rng.random(cells)}, index=[f"p{p}_{i}" for i in range(cells)])
        name = f"plate{p + 1}_filt_Vevo_Tahoe100M_WServicesFrom_ParseGigalab.h5ad"
        anndata.AnnData(X=x, obs=obs, var=var).write_h5ad(folder / name)
    return plates * cells


HOPPER = (11, 3)  # observation and action sizes of Hopper (D4RL v2 and gymnasium v5)
EXPERT_EPISODES, EXPERT_STEPS = 31, 10  # timed out: the paper mix needs 1 + 30 expert ones
RANDOM_EPISODES, RANDOM_STEPS = 12, 6   # terminated (the hopper fell): 10 bad ones + 2


def _hopper_episodes(kind: str, seed: int) -> list[dict[str, np.ndarray]]:
    episodes, steps = ((EXPERT_EPISODES, EXPERT_STEPS) if kind == "expert"
                       else (RANDOM_EPISODES, RANDOM_STEPS))
    rng = np.random.default_rng(seed)
    return [{"obs": rng.normal(size=(steps + 1, HOPPER[0])),
             "act": rng.uniform(-1, 1, (steps, HOPPER[1])).astype(np.float32),
             "rew": rng.uniform(0, 3, steps)} for _ in range(episodes)]


def write_d4rl_hopper(folder: Path) -> None:
    """hopper_{expert,random}-v2.hdf5 with D4RL's keys (as its MuJoCo v2 files): flat
    observations, actions, next_observations, rewards, terminals, timeouts, infos/,
    metadata/."""
    import h5py

    folder.mkdir(parents=True, exist_ok=True)
    for seed, kind in enumerate(("expert", "random")):
        episodes = _hopper_episodes(kind, seed)
        last = np.concatenate([np.arange(len(e["rew"])) == len(e["rew"]) - 1 for e in episodes])
        none = np.zeros_like(last)
        n = len(last)
        with h5py.File(folder / f"hopper_{kind}-v2.hdf5", "w") as f:
            f["observations"] = np.concatenate([e["obs"][:-1] for e in episodes]).astype(np.float32)
            f["next_observations"] = np.concatenate([e["obs"][1:] for e in episodes]
                                                    ).astype(np.float32)
            f["actions"] = np.concatenate([e["act"] for e in episodes])
            f["rewards"] = np.concatenate([e["rew"] for e in episodes]).astype(np.float32)
            f["terminals"] = last if kind == "random" else none
            f["timeouts"] = last if kind == "expert" else none
            f["infos/qpos"] = np.zeros((n, 6))
            f["infos/qvel"] = np.zeros((n, 6))
            f["infos/action_log_probs"] = np.zeros(n, np.float32)
            f["metadata/algorithm"] = np.bytes_("SAC")
            f["metadata/policy/fc0/weight"] = np.zeros((256, HOPPER[0]), np.float32)


def write_minari_hopper() -> None:
    """mujoco/hopper/expert-v0 and simple-v0 in MINARI_DATASETS_PATH, through Minari's own
    ``create_dataset_from_buffers`` (the way Farama's mujoco datasets carry Hopper-v5)."""
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    for seed, (kind, name) in enumerate((("expert", "expert"), ("random", "simple"))):
        buffers = [EpisodeBuffer(
            id=i, observations=e["obs"], actions=e["act"], rewards=list(e["rew"]),
            terminations=[False] * (len(e["rew"]) - 1) + [kind == "random"],
            truncations=[False] * (len(e["rew"]) - 1) + [kind == "expert"])
            for i, e in enumerate(_hopper_episodes(kind, seed))]
        minari.create_dataset_from_buffers(
            f"mujoco/hopper/{name}-v0", buffers, env="Hopper-v5", eval_env="Hopper-v5",
            algorithm_name="SAC", author="test", author_email="test", code_permalink="test",
            description="test", ref_min_score=-20.3, ref_max_score=3234.3)


def unlabeled_transitions() -> int:
    """Transitions in the paper mix's unlabeled set (random/1/10/30): 30 expert episodes
    and the whole random file."""
    return 30 * EXPERT_STEPS + RANDOM_EPISODES * RANDOM_STEPS


def write_geom_gcn(folder: Path, split_name: str, nodes: int = 120, classes: int = 5,
                   features: int = 40, sparse: bool = False) -> None:
    """geom-gcn's raw files as PyG's WebKB and Actor read them: a tab-separated node file
    (id, features, label) -- Actor's features are the indices of its 1s --, an edge file
    and the ten ``{split_name}_split_0.6_0.2_{i}.npz`` masks."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    labels = rng.integers(0, classes, nodes)
    rows = []
    for i in range(nodes):
        values = (sorted(rng.choice(features, 4, replace=False)) if sparse
                  else rng.integers(0, 2, features))
        rows.append(f"{i}\t{','.join(str(int(v)) for v in values)}\t{labels[i]}")
    (folder / "out1_node_feature_label.txt").write_text(
        "node_id\tfeature\tlabel\n" + "\n".join(rows) + "\n")
    edges = sorted({(i, int(j)) for i in range(nodes) for j in rng.choice(nodes, 3) if i != j})
    (folder / "out1_graph_edges.txt").write_text(
        "node_id\tnode_id\n" + "".join(f"{u}\t{v}\n" for u, v in edges))
    for s in range(10):
        order = rng.permutation(nodes)
        masks = np.zeros((3, nodes), bool)
        for k, part in enumerate(np.split(order, [int(0.6 * nodes), int(0.8 * nodes)])):
            masks[k, part] = True
        np.savez(folder / f"{split_name}_split_0.6_0.2_{s}.npz", train_mask=masks[0],
                 val_mask=masks[1], test_mask=masks[2])
