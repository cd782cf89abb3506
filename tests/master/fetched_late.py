"""A module a context fetches from the master only when a test imports it
(test_lifecycle: a fork of a context cannot)."""
VALUE = 'fetched'
