"""Verifier stages: one module per stage of the Universal Verifier pipeline."""
