"""Certified length horizons (issue 40): every length at which a model is proved right on
every string, and the first at which it is wrong — :func:`verify_lengths`
(:mod:`attncert.soft.horizon.pipeline`)."""

from attncert.soft.horizon.pipeline import (
    HorizonOutcome,
    parse_lengths,
    refusal,
    verify_lengths,
    witness_json,
)

__all__ = ["HorizonOutcome", "parse_lengths", "refusal", "verify_lengths", "witness_json"]
