"""One folder per field. Each has the same rooms: entries, prompts, data, rewards, recipes, evaluate."""
