"""A function for test_cli.py to call: it prints, writes and logs."""
import logging
import sys


def chatty():
    print("printed")
    sys.stderr.write("to stderr\n")
    logging.getLogger("app").info("logged")
    return 5
