"""pita: checks that a PyTorch model ported to burn computes what the original computes."""

__version__ = "0.1.0"
