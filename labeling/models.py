"""Pairwise classifiers (h) trained on human labels, and their results."""
