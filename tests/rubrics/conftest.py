"""Rubric-file tests: helpers live in rubric_helpers.py."""
