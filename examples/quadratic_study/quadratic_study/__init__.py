"""SGD vs Adam on an ill-conditioned least-squares problem (a raystudy example study)."""
