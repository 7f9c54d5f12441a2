"""Pure ML / statistics code for annotation (no Django imports).

* ``annotate.ml.agreement`` — majority vote, Dawid–Skene, Fleiss' κ, Krippendorff's α,
  per-group agreement, gold accuracy with Wilson intervals, agreement with the aggregate.
* ``annotate.ml.policy`` — qualification, flagging, extra annotations (plurality policy).
* ``annotate.ml.routing`` — random / stratified / uncertainty sampling of items to route.
"""
