"""VQA training sets: the synthetic shapes world (``envs.data.shapes``) and real datasets."""
