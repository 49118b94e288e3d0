"""attnviz from Python: ``trace`` in this process, ``Client`` of a running server, both giving a
``Trace`` of numpy arrays under the API's names."""
