"""An environment's questions as a `trl.GRPOTrainer` train dataset.

Rows keep every dataset column (rewards from our registry read `image`, `answer`,
`answers`, `metric`, ... as keyword arguments, exactly as in the env) and gain `prompt`:
the env's rendered prompt text, which ends inside `execute_command` so TRL's completion
is the program body.

One wrinkle: GRPOTrainer treats any `image` column as input for a vision-language
policy and then insists on conversational prompts. Our policies are text-only and the
image is for the sandbox, so each row also gets an empty `images` list, which TRL reads
first and, being empty, takes as "no images for the policy" (trl 1.x,
`_generate_and_score_completions`).
"""

from __future__ import annotations


def grpo_dataset(env, indices=None):
    """`datasets.Dataset` with `prompt` and the env's columns, for GRPOTrainer(train_dataset=)."""
    import datasets

    env = getattr(env, "unwrapped", env)
    rows = env.dataset
    if not isinstance(rows, datasets.Dataset):
        rows = datasets.Dataset.from_list([dict(r) for r in rows])
    if indices is not None:
        rows = rows.select(list(indices))
    # Columns are added whole: reading only `question` keeps the images undecoded.
    questions = list(rows["question"])
    rows = rows.add_column("prompt", [env.family.render(env.tokenizer, q, env.shots)
                                      for q in questions])
    rows = rows.add_column("images", [[] for _ in questions])
    if env.metric is not None and "metric" not in rows.column_names:
        rows = rows.add_column("metric", [env.metric] * len(questions))
    return rows
