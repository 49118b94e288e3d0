"""What crosses the wire between the server, the page and the Python client: the compact binary
form of a trace (written and read), JSON of arrays, and the constants both ends share."""
