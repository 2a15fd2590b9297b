"""Tests of the web debug page in a real browser."""
