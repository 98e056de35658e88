"""Generated data files of the config contract (each with its generator beside it)."""
