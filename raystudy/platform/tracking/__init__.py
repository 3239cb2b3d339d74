"""Tracking: the Optuna store and mirror, MLflow, the dashboard."""
