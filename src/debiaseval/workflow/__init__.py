"""Workflow glue: the whole config's validation (which asks every experiment), job runtime
helpers, provenance, costs, the report's renderings, each rule's code stamp
(:mod:`~debiaseval.workflow.code_stamps`) and the housekeeping around Snakemake: its records,
its command line and the repair of damaged outputs (:mod:`~debiaseval.workflow.repair`). The
files, the config schema, the one-line user errors and inert text are the ground floor's,
:mod:`debiaseval.io`."""
