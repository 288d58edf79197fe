"""One sigmoid curve per run: record points, the paper's and the noise method's fits,
pooling, the method registry and the analysis settings."""
