"""The package's version, which provenance records (``provenance.json``).

What reruns a job after a code edit is its rule's code stamp, the code its step imports
(:mod:`debiaseval.workflow.code_stamps`), not the version.
"""

__version__ = "0.1.0"
