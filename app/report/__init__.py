"""The per-job cost and degeneration report: rows in, figures out, rendered several ways."""
