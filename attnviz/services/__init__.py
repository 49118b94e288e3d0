"""Computation behind the routes: the routes validate and delegate, services compute."""
