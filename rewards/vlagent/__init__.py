"""VLAgent (seed 003): the SS-parser, its repair, the output verifiers and their rewards.

- ``ssparser``: the rules for planning scripts (``check_script``); ``pychecks``: the same
  checks for Python programs over the AST (``program_violations``);
- ``repair``: ``repair_script`` (``pychecks.repair_program`` for Python);
- ``caption``: the caption verifier; ``selection``: Eqs. 2-7 and Algorithm 1 (the box
  fusion and Eq. 1 are in ``envs.tools.ensemble``, next to the ensemble backend);
- ``reward``: the ``parse``, ``caption_agreement`` and ``ensemble_iou`` rewards.
"""
