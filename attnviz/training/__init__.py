"""Training tiny transformers on the engine: tasks that teach something, and the loop."""
