"""The harness: everything that touches the student's code. The worker (the
only process that imports a submission), the wire it answers on, probes
(judge-side calls), the sandbox (``sandbox.py`` assembles it: slots, namespaces,
limits, the file-system policy with Landlock, the sweeps, the worker's
interpreter) and intake. It knows
nothing of questions, points or expected values: it never imports grading,
judges, oracles or commands."""
