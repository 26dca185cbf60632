"""Experiments inside the model: ablation, patching, head scores, two models."""
