"""Reproduction of 'Emergent Capabilities Arise Randomly from Learning Sparse Attention Patterns'."""
__version__ = "0.1.0"
