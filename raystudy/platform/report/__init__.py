"""Report: summary.json, report.md/html, figures, study pages, and compare."""
