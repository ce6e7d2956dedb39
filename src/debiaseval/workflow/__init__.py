"""Workflow glue: the whole config's validation (which asks every experiment), job runtime
helpers, provenance, costs and the report's renderings. The files, the config schema, the
one-line user errors and inert text are the ground floor's, :mod:`debiaseval.io`."""
