"""One judge module per assignment id."""
