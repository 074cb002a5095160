"""rl-capstones autograder: probes (untrusted worker) and judges (trusted)."""
__version__ = "0.1.0"
# The oldest numpy the grader and its worker run on where they take a platform's own Python
# (PrairieLearn's stock image): the oldest whose grades were measured equal to the pins' (docs/prairielearn.md).
MIN_NUMPY = (1, 26)
