"""The rollout engine: tasks x seeds x attempts for an agent, each episode in a fresh world.

One failing episode never stops a batch: a crash, a hang or a timeout is recorded
on that episode with its failure boundary (agent, model_api, environment,
verifier). With the ``process`` executor a hung or dying episode is ended by
killing its worker, which is replaced.

Episodes that wait on a model server run concurrently inside each worker:
``max_concurrency`` episodes in flight on as many episode threads, under an
adaptive limit that backs off when the server is overloaded (one interpreter
serves a few hundred episodes a second; ``process`` workers multiply that). A circuit breaker
stops the batch when the model fails in ``max_model_failures`` consecutive
episodes, and a stop event ends it at once (e.g. on SIGTERM).
"""

from arena.rollout.config import EpisodeKey, RolloutConfig, agent_seed, plan_episodes, record_key
from arena.rollout.engine import run_episodes, run_rollouts
from arena.rollout.episode import EpisodeCancelled, EpisodeTimeout, lost_record, play_episode, play_episode_async
from arena.rollout.loop import AsyncBatch, play_jobs_on_a_loop
from arena.rollout.pool import GymPool
from arena.rollout.threads import Breaker, ModelUnavailable, RolloutStopped, ThreadBatch

__all__ = [
    "AsyncBatch",
    "Breaker",
    "EpisodeCancelled",
    "EpisodeKey",
    "EpisodeTimeout",
    "GymPool",
    "ModelUnavailable",
    "RolloutConfig",
    "RolloutStopped",
    "ThreadBatch",
    "agent_seed",
    "lost_record",
    "plan_episodes",
    "play_episode",
    "play_episode_async",
    "play_jobs_on_a_loop",
    "record_key",
    "run_episodes",
    "run_rollouts",
]
