"""The adaptive sweep's pruning rule and its offline replay."""
