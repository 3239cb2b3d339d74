"""The Ray glue for any study: config, sessions, Tune/Train adapters, results, reports,
jobs and clusters. Knows no paper (see README.md beside this file)."""
