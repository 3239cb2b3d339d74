"""Soft Actor-Critic experts for the MuJoCo v5 tasks, in one file (CleanRL style).

Haarnoja, Zhou, Abbeel, Levine, "Soft Actor-Critic: Off-Policy Maximum Entropy Deep RL
with a Stochastic Actor" (ICML 2018) and "Soft Actor-Critic Algorithms and Applications"
(2018, automatic entropy tuning). Layout and defaults follow CleanRL's
``sac_continuous_action.py`` (vwxyzjn/cleanrl): twin Q networks with Polyak targets,
a tanh-squashed Gaussian actor updated every ``policy_frequency`` steps (that many times,
to compensate), and the temperature ``alpha`` tuned towards entropy ``-act_dim``::

    y = r + gamma (1 - terminated) (min_i Q'_i(s', a') - alpha log pi(a'|s')),  a' ~ pi(s')
    L_Q = sum_i (Q_i(s, a) - y)^2
    L_pi = E[alpha log pi(a|s) - min_i Q_i(s, a)],  a ~ pi(s) (reparameterised)
    L_alpha = E[-log alpha (log pi(a|s) - act_dim)]

Every ``eval_every`` steps the deterministic policy (tanh of the mean) is evaluated and
its actor kept; at the end ``expert.pt`` (the best evaluation) and ``medium.pt`` (the
evaluation closest to a third of the way from the random policy's return to the
expert's, D4RL's notion of "medium") go to ``out_dir``. Run it::

    python -m raystudy.algorithms.imitation.sac --env-id Hopper-v5 --out-dir experts/hopper

or as a raystudy run on a cluster (``--profile sac``, see docs/contrastive_imitation.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .rollouts import collect, make_env


@dataclass
class Args:
    env_id: str = "Hopper-v5"
    """gymnasium id of the task."""
    total_timesteps: int = 1_000_000
    """Environment steps."""
    buffer_size: int = 1_000_000
    """Replay buffer capacity."""
    gamma: float = 0.99
    """Discount."""
    tau: float = 0.005
    """Target network step."""
    batch_size: int = 256
    """Replay minibatch."""
    learning_starts: int = 5000
    """Steps of uniform random actions before learning."""
    policy_lr: float = 3e-4
    """Actor learning rate."""
    q_lr: float = 1e-3
    """Critic (and alpha) learning rate."""
    policy_frequency: int = 2
    """Steps between (delayed) actor updates."""
    alpha: float = 0.2
    """Entropy temperature when not autotuned (autotuning starts at 1)."""
    autotune: bool = True
    """Tune alpha towards entropy -act_dim."""
    seed: int = 1
    """Seed of everything."""
    eval_every: int = 10_000
    """Steps between deterministic evaluations (each keeps a checkpoint)."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    out_dir: str = ""
    """Where expert.pt and medium.pt go ('' = nowhere)."""
    device: str = "auto"
    """auto (CUDA if available) | cpu | cuda."""
    threads: int = 1
    """torch CPU threads."""


class SoftQNetwork(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim + act_dim, 256), nn.ReLU(),
                                 nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([obs, act], 1))


LOG_STD_MAX, LOG_STD_MIN = 2.0, -5.0


class Actor(nn.Module):
    """Tanh-squashed Gaussian, rescaled to the env's action box."""

    def __init__(self, obs_dim: int, act_dim: int, low: np.ndarray, high: np.ndarray) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_dim, 256), nn.ReLU(), nn.Linear(256, 256),
                                   nn.ReLU())
        self.fc_mean, self.fc_logstd = nn.Linear(256, act_dim), nn.Linear(256, act_dim)
        self.register_buffer("action_scale", torch.tensor((high - low) / 2.0,
                                                          dtype=torch.float32))
        self.register_buffer("action_bias", torch.tensor((high + low) / 2.0,
                                                         dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(obs)
        log_std = torch.tanh(self.fc_logstd(h))  # squashed into [LOG_STD_MIN, LOG_STD_MAX]
        return self.fc_mean(h), LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)

    def get_action(self, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mean, log_std = self(obs)
        normal = torch.distributions.Normal(mean, log_std.exp())
        x = normal.rsample()
        y = torch.tanh(x)
        action = y * self.action_scale + self.action_bias
        # Change of variables through tanh and the rescaling (SAC paper, appendix C).
        log_prob = normal.log_prob(x) - torch.log(self.action_scale * (1 - y.pow(2)) + 1e-6)
        return action, log_prob.sum(1, keepdim=True), torch.tanh(mean) * self.action_scale \
            + self.action_bias


class ActorPolicy:
    """A saved actor as a deterministic ``obs -> action`` policy."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor.eval()

    @torch.no_grad()
    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = torch.as_tensor(np.asarray(obs, np.float32))[None]
        return self.actor.get_action(x)[2][0].numpy()


def load_actor_policy(path: str | Path) -> ActorPolicy:
    """The deterministic policy of an ``expert.pt`` / ``medium.pt`` written by :func:`train`."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ValueError(f"{path}: no such SAC checkpoint (train one with "
                         "`python -m raystudy.algorithms.imitation.sac --out-dir ...`)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
        actor = Actor(state["obs_dim"], state["act_dim"], np.asarray(state["low"]),
                      np.asarray(state["high"]))
        actor.load_state_dict(state["actor"])
    except (OSError, EOFError, RuntimeError, KeyError, TypeError, ValueError,
            pickle.UnpicklingError) as exc:
        raise ValueError(f"{path}: not a SAC checkpoint of this trainer ({exc})") from None
    return ActorPolicy(actor)


def train(args: Args, report: Callable[[dict[str, float]], None] | None = None) -> dict[str, Any]:
    """Train SAC; ``report(metrics)`` after every evaluation. Returns the evaluations."""
    # ---- seeding, env, networks
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                          else "cpu" if args.device == "auto" else args.device)
    env = make_env(args.env_id)
    env.action_space.seed(args.seed)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    low, high = env.action_space.low, env.action_space.high
    actor = Actor(obs_dim, act_dim, low, high).to(device)
    qf1, qf2 = SoftQNetwork(obs_dim, act_dim).to(device), SoftQNetwork(obs_dim, act_dim).to(device)
    qf1_target, qf2_target = SoftQNetwork(obs_dim, act_dim).to(device), \
        SoftQNetwork(obs_dim, act_dim).to(device)
    qf1_target.load_state_dict(qf1.state_dict())
    qf2_target.load_state_dict(qf2.state_dict())
    q_optimizer = torch.optim.Adam([*qf1.parameters(), *qf2.parameters()], lr=args.q_lr)
    actor_optimizer = torch.optim.Adam(actor.parameters(), lr=args.policy_lr)
    target_entropy = -float(act_dim)
    log_alpha = torch.zeros(1, requires_grad=True, device=device)  # autotune starts at 1
    alpha = 1.0 if args.autotune else args.alpha
    a_optimizer = torch.optim.Adam([log_alpha], lr=args.q_lr)

    # ---- replay buffer (flat arrays)
    size = min(args.buffer_size, args.total_timesteps)
    buf = {"obs": np.zeros((size, obs_dim), np.float32), "next": np.zeros((size, obs_dim),
                                                                          np.float32),
           "act": np.zeros((size, act_dim), np.float32), "rew": np.zeros(size, np.float32),
           "done": np.zeros(size, np.float32)}
    evaluations: list[dict[str, Any]] = []
    random_return = float(np.mean([e.episode_return for e in collect(
        args.env_id, lambda o: env.action_space.sample(), 5, seed=args.seed + 500_000)]))
    obs, _ = env.reset(seed=args.seed)
    start = time.time()
    for step in range(args.total_timesteps):
        # ---- act
        if step < args.learning_starts:
            action = env.action_space.sample()
        else:
            with torch.no_grad():
                action = actor.get_action(torch.as_tensor(obs[None], dtype=torch.float32,
                                                          device=device))[0][0].cpu().numpy()
        next_obs, reward, terminated, truncated, _ = env.step(action)
        i = step % size
        buf["obs"][i], buf["next"][i], buf["act"][i] = obs, next_obs, action
        buf["rew"][i], buf["done"][i] = reward, float(terminated)  # truncation bootstraps
        obs = next_obs
        if terminated or truncated:
            obs, _ = env.reset()
        # ---- learn
        if step >= args.learning_starts:
            idx = np.random.randint(0, min(step + 1, size), args.batch_size)
            b = {k: torch.as_tensor(v[idx], device=device) for k, v in buf.items()}
            with torch.no_grad():
                next_a, next_logp, _ = actor.get_action(b["next"])
                q_next = torch.min(qf1_target(b["next"], next_a), qf2_target(b["next"], next_a))
                y = b["rew"] + (1 - b["done"]) * args.gamma * (q_next - alpha * next_logp).view(-1)
            qf_loss = F.mse_loss(qf1(b["obs"], b["act"]).view(-1), y) + \
                F.mse_loss(qf2(b["obs"], b["act"]).view(-1), y)
            q_optimizer.zero_grad()
            qf_loss.backward()
            q_optimizer.step()
            if step % args.policy_frequency == 0:  # TD3-style delayed update, repeated
                for _ in range(args.policy_frequency):
                    pi, logp, _ = actor.get_action(b["obs"])
                    actor_loss = (alpha * logp - torch.min(qf1(b["obs"], pi),
                                                           qf2(b["obs"], pi))).mean()
                    actor_optimizer.zero_grad()
                    actor_loss.backward()
                    actor_optimizer.step()
                    if args.autotune:
                        with torch.no_grad():
                            _, logp, _ = actor.get_action(b["obs"])
                        alpha_loss = (-log_alpha.exp() * (logp + target_entropy)).mean()
                        a_optimizer.zero_grad()
                        alpha_loss.backward()
                        a_optimizer.step()
                        alpha = log_alpha.exp().item()
            for net, target in ((qf1, qf1_target), (qf2, qf2_target)):
                for p, tp in zip(net.parameters(), target.parameters(), strict=True):
                    tp.data.mul_(1 - args.tau).add_(args.tau * p.data)
        # ---- evaluate and keep the actor
        if (step + 1) % args.eval_every == 0 or step + 1 == args.total_timesteps:
            snapshot = {k: v.detach().cpu().clone() for k, v in actor.state_dict().items()}
            cpu_actor = Actor(obs_dim, act_dim, low, high)
            cpu_actor.load_state_dict(snapshot)
            returns = [e.episode_return for e in collect(
                args.env_id, ActorPolicy(cpu_actor), args.eval_episodes, seed=args.seed + 10_000)]
            evaluations.append({"step": step + 1, "return": float(np.mean(returns)),
                                "actor": snapshot})
            if report is not None:
                report({"eval/return": float(np.mean(returns)), "train/step": step + 1,
                        "train/alpha": alpha, "data/ref_random": random_return,
                        "train/steps_per_s": (step + 1) / (time.time() - start)})
    env.close()
    return save_experts(args, evaluations, random_return, obs_dim, act_dim, low, high)


def save_experts(args: Args, evaluations: list[dict[str, Any]], random_return: float,
                 obs_dim: int, act_dim: int, low: np.ndarray, high: np.ndarray) -> dict[str, Any]:
    """Pick the best evaluation (expert) and the one nearest a third of its gain (medium)."""
    best = max(evaluations, key=lambda e: e["return"])
    third = random_return + (best["return"] - random_return) / 3.0
    medium = min(evaluations, key=lambda e: abs(e["return"] - third))
    summary = {"random_return": random_return, "expert": {k: best[k] for k in ("step", "return")},
               "medium": {k: medium[k] for k in ("step", "return")},
               "curve": [(e["step"], e["return"]) for e in evaluations]}
    if args.out_dir:
        out = Path(args.out_dir).expanduser()
        out.mkdir(parents=True, exist_ok=True)
        for name, chosen in (("expert", best), ("medium", medium)):
            torch.save({"actor": chosen["actor"], "obs_dim": obs_dim, "act_dim": act_dim,
                        "low": low.tolist(), "high": high.tolist(), "env_id": args.env_id,
                        "step": chosen["step"], "return": chosen["return"],
                        "args": dataclasses.asdict(args)}, out / f"{name}.pt")
    return summary


def parse_args(argv: list[str] | None = None) -> Args:
    """``--env-id Hopper-v5 --total-timesteps 1000`` etc. from the Args fields."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type in (bool, "bool"):
            parser.add_argument(flag, type=lambda t: t.lower() in ("1", "true", "yes"),
                                default=f.default)
        else:
            kind = {"int": int, "float": float, "str": str}.get(str(f.type), f.type)
            parser.add_argument(flag, type=kind, default=f.default)
    return Args(**vars(parser.parse_args(argv)))


if __name__ == "__main__":
    result = train(parse_args(), report=lambda m: print(m, flush=True))
    print({k: v for k, v in result.items() if k != "curve"})
