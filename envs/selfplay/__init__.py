"""Self-play with few-shot pools (seed 002): solved training examples become the shots.

- `pool`: `PoolEntry`, `FewShotPool` (admission by reward, capacity with eviction,
  JSON persistence for checkpoints, statistics and W&B rows);
- `sampling`: `sample_shots` (random / similar / diverse; zero-shot until k entries);
- `refine`: self-refinement on compile and runtime errors;
- `aggregate`: mixed-shot aggregation (majority, judge, oracle).

Nothing here loads a model on import. Question embeddings (similar/diverse shots,
least_diverse eviction) come from `policies.embed.default_embedder()`.
"""

from envs.selfplay.aggregate import POOL_AGGREGATORS, aggregate, judge, majority, oracle, parse_choice
from envs.selfplay.pool import EVICTIONS, FewShotPool, PoolEntry, pools_from_json, pools_to_json
from envs.selfplay.refine import Refined, refine, refine_batch, refine_stats
from envs.selfplay.sampling import SHOT_STRATEGIES, sample_shots


__all__ = ["POOL_AGGREGATORS", "EVICTIONS", "SHOT_STRATEGIES", "FewShotPool", "PoolEntry", "Refined",
           "aggregate", "judge", "majority", "oracle", "parse_choice",
           "pools_from_json", "pools_to_json", "refine", "refine_batch",
           "refine_stats", "sample_shots"]
