"""attnviz: a web-based attention visualizer backed by a transparent PyTorch transformer."""

import warnings

# torch warns once at import when NumPy is absent (it is a dependency: JSON arrays go through it).
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

__version__ = "0.1.0"
