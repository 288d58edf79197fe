"""Problem data: the embedded arithmetic pool, loaders for real datasets, and
difficulty splits, all in verl's RL parquet schema."""
