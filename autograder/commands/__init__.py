"""Instructor commands: build the zips, the demo, validate, grade a folder of
submissions. Never shipped in either zip."""
