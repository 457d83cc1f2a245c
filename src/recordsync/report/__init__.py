"""Report stage: results.csv, failures.csv, summary.json and report.md, written as rows stream."""
