"""Cluster: the local (rehearsal) cluster and Ray Jobs."""
