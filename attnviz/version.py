"""attnviz's version (``attnviz.__version__``), in a module of its own so that what shows it (the
page, a saved file, /api/health) need not import the package's root."""

__version__ = "0.1.0"
