"""The package version, in one place (the platform reads it here, not from raystudy/__init__)."""

__version__ = "0.1.0"
