"""The plasticity study's RL stream: PPO on an environment whose dynamics change per task.

``stream.kind=rl``: CartPole-v1 or Acrobot-v1 with new physics and observation order
every ``rl.steps_per_task`` environment steps, or Slippery Ant (MuJoCo Ant-v5 with a new
friction). At each task start the loop measures a fresh rollout's sample (not trained
on) like the supervised loop does, then trains PPO for the task and reports the
late-task return.
"""

from __future__ import annotations

import functools
import math
import time
from typing import TYPE_CHECKING

import numpy as np
import torch

from raystudy import TrialContext
from raystudy.algorithms.plasticity import derive_seed
from raystudy.studies.plasticity.interventions import build_intervention, uses_layernorm
from raystudy.studies.plasticity.measure import (
    late_mean,
    start_of_task_metrics,
    within_task_metrics,
)

if TYPE_CHECKING:
    from raystudy.studies.plasticity.config import PlasticityConfig


def rl_loop(config: PlasticityConfig, ctx: TrialContext) -> None:
    """PPO on an environment whose dynamics change every ``rl.steps_per_task`` steps."""
    import gymnasium as gym

    from raystudy.algorithms.plasticity.envs import make_env
    from raystudy.algorithms.plasticity.ppo import PPO, ActorCritic, ppo_loss

    r, m, seed = config.rl, config.metrics, config.train.seed
    torch.manual_seed(seed)
    device = ctx.device
    envs = gym.vector.SyncVectorEnv(
        [functools.partial(make_env, r.env, seed, r.scale, r.permute_obs, r.friction_low,
                           r.friction_high)] * r.ppo.num_envs,
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    agent = ActorCritic(envs.single_observation_space.shape[0], envs.single_action_space,
                        config.model.hidden, layernorm=uses_layernorm(config)).to(device)
    ppo_config = r.ppo
    intervention = build_intervention(config)
    ppo = PPO(agent, envs, ppo_config, intervention, device, seed)
    history, totals = [], {"train": 0.0, "metrics": 0.0, "steps": 0}
    cadence = ctx.cadence(config.stream.tasks, eval_every=1,
                          checkpoint_every=config.train.checkpoint_every)
    state = ctx.load_checkpoint()
    if state is not None:
        agent.load_state_dict(state["model"])
        ppo.optimizer.load_state_dict(state["optimizer"])
        intervention.load_state_dict(state["intervention"])
        history, totals = state["history"], state["totals"]
    iterations = math.ceil(r.steps_per_task / ppo_config.batch_size)
    loss_fn = functools.partial(ppo_loss, config=ppo_config)

    for task_number in cadence:
        t = task_number - 1
        for env in envs.envs:
            env.set_task(t)
        torch.manual_seed(derive_seed(seed, t, 25))  # action sampling: same after a resume
        ppo.generator.manual_seed(derive_seed(seed, t, 24))
        ppo.restart(derive_seed(seed, t, 23) % 2**31)
        intervention.task_start(agent, ppo.optimizer, t)
        sample = ppo.collect(math.ceil(m.samples / r.ppo.num_envs))  # metrics only, not trained on
        start = start_of_task_metrics(config, agent, loss_fn, sample.obs, sample, t,
                                      last=t + 1 == config.stream.tasks)
        ppo.episode_returns = []
        within, spent = {}, 0.0
        started, late_from, loss = time.perf_counter(), 0, math.nan
        for i in range(iterations):
            if i == iterations - max(1, math.ceil(m.late_fraction * iterations)):
                late_from = len(ppo.episode_returns)
            loss = ppo.iterate()
            steps = (i + 1) * ppo_config.batch_size  # environment steps into the task
            if m.every_steps and i + 1 < iterations and \
                    steps // m.every_steps > i * ppo_config.batch_size // m.every_steps:
                found = within_task_metrics(config, agent, loss_fn, sample.obs, sample, t, steps)
                spent += found.pop("metrics/seconds")
                within.update(found)
        totals["train"] += time.perf_counter() - started - spent
        totals["metrics"] += start["metrics/seconds"] + spent
        totals["steps"] += iterations * ppo_config.batch_size
        returns = ppo.episode_returns
        # no episode ended in the late part: the last one, else the unfinished ones so far
        late = returns[late_from:] or returns[-1:] or ppo.running_return.tolist()
        score = float(np.mean(late))
        history.append(score)
        checkpoint = None
        if cadence.checkpoints(task_number):
            checkpoint = {"model": agent.state_dict(), "optimizer": ppo.optimizer.state_dict(),
                          "intervention": intervention.state_dict(),
                          "history": history, "totals": totals}
        ctx.report({
            "eval/late_score": late_mean(history, m.late_fraction),
            "task/index": t + 1, "task/return": score, "task/score": score,
            "task/mean_return": float(np.mean(returns)) if returns else math.nan,
            # online performance over the whole task, as the supervised online accuracy
            "task/online_score": float(np.mean(returns)) if returns else score,
            "task/episodes": len(returns), "task/loss_end": loss,
            "eval/mean_score": float(np.mean(history)), **start, **within,
            "train/steps": totals["steps"], "train/seconds": totals["train"],
            "metrics/overhead": totals["metrics"] / max(totals["train"], 1e-9),
            **{f"env/{k}": v for k, v in env_task_info(envs.envs[0]).items()},
        }, checkpoint=checkpoint, step=task_number)
    envs.close()


def env_task_info(env) -> dict[str, float]:
    """What changed in this task: the physical parameters or the friction."""
    if hasattr(env, "physics"):
        return dict(env.physics)
    return {"friction": env.friction}
