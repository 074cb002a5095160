"""rl-capstones autograder: probes (untrusted worker) and judges (trusted)."""
__version__ = "0.1.0"
