"""isocompute: compute-optimal scaling studies of LLM reinforcement learning.

The Snakemake workflow at the repo root drives the stages; all logic lives in
this package so that it can be imported, tested and reused outside Snakemake.
"""

__version__ = "0.2.0"   # the one place: pyproject.toml reads it
