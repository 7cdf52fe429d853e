"""Serving a judge model: vLLM command builder, presets, health wait."""
