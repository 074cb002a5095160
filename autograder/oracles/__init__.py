"""Oracles: code that computes answers the student must write (GAE, log-softmax,
the judge's PPO loop, exact enumeration, finite differences, the tilted policy,
the threshold). Gradescope-side only: never in a student zip. Judges reach them
through ``Context.oracle`` / ``Context.oracle_fn`` by name, so a judge module
imports cleanly where they are absent (the handout's public checks use the
values recorded at ``make dist``)."""
