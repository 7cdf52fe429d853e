"""TRL reward functions backed by the Universal Verifier."""
