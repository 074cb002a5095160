"""Grading: assignment.toml, the judge's building blocks (Context, Scorecard),
expected values, one submission's grading run, results.json (its only writer)
and the notebook's public checks. Decides scores; runs student code only
through the harness."""
