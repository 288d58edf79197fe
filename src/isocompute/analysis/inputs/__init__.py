"""Reading and checking what the analysis is given: evaluation and training tables, a
split's runs collected, the recipe variants' runs, the cross-evaluation table."""
