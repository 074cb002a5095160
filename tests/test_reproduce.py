"""Golden test: `make reproduce` prints the section's own results line for line."""
import pytest

from instructor import reproduce

SECTION_OUTPUT = """\
success of a response sampled from the reference: 0.062
E of the group-centered update is (K-1)/K of the gradient: True
rescaled by K/(K-1), leave-one-out, it is exact: True
K =  1: success of a sampled response 0.062
K =  2: success of a sampled response 0.500
K =  4: success of a sampled response 0.500
K =  8: success of a sampled response 0.500
K = 32: success of a sampled response 0.500
beta = 0.0: sloppy 1.00, gold 0.50, hedge 0.50
beta = 0.1: sloppy 0.99, gold 0.50, hedge 0.49
beta = 0.2: sloppy 0.60, gold 0.48, hedge 0.12
beta = 0.3: sloppy 0.42, gold 0.39, hedge 0.04
beta = 0.5: sloppy 0.25, gold 0.24, hedge 0.01"""


@pytest.mark.slow
def test_reproduce_matches_section_line_for_line():
    assert reproduce.lines() == SECTION_OUTPUT.splitlines()
