"""pita: checks that a PyTorch model ported to burn computes what the original computes."""

__version__ = "0.1.0"


def __getattr__(name):
    # Lazy, so that `import pita` stays light: `pita.assert_parity` loads numpy, never torch.
    if name == "assert_parity":
        from pita.parity import assert_parity

        return assert_parity
    raise AttributeError(f"module 'pita' has no attribute {name!r}")
