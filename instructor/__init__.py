"""Instructor tools outside the grading package: the course figures and `make reproduce`."""
