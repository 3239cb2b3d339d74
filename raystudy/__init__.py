"""raystudy: Ray-based platform for distributed machine-learning studies."""

__version__ = "0.1.0"
