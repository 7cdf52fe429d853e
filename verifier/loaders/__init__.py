"""Trajectory loaders: one module per on-disk format, all producing `Trajectory`."""
