"""Configuration: config dataclasses, profiles, --set, search spaces, the study registry,
show and cp."""
