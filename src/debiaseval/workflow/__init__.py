"""Workflow glue: the validated configuration, Parquet I/O, job runtime helpers, one-line
user errors and the report's renderings."""
