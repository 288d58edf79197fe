"""The tables folder analyze writes and its readers: manifest, headline, figure index,
comparisons of studies."""
