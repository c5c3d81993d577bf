"""Affine-form bounds of a soft model's logits under a restriction: every feature as an
affine form in the free positions' one-hot inputs plus an interval remainder.

* :mod:`~attncert.kernel.soft.affine.bound` — the entry point, model by model;
* :mod:`~attncert.kernel.soft.affine.forms` — the forms and their outward-rounded algebra;
* :mod:`~attncert.kernel.soft.affine.rows` — rows grouped by what they depend on;
* :mod:`~attncert.kernel.soft.affine.heads` — attention heads on forms.
"""
