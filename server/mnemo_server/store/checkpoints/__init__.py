"""Graph checkpoints (``CheckpointService``): reads (``store``, ``reads``) and
the units of work (``writes``)."""
