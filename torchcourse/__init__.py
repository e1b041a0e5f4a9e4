"""torchcourse: a terminal course on how PyTorch itself works."""

__version__ = "0.1.0"
