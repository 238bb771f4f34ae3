"""Policy models: loading (the embedded default or any Hugging Face causal LM), LoRA,
generation backends, program text and the sentence embedder."""

# The embedded default model: the policy, and the LLM that writes unit tests, property
# tests, layouts and judge verdicts unless a config names another.
DEFAULT_MODEL = "embedded:smollm2-135m-instruct"
