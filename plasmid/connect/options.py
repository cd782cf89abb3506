"""A program's options, read from its arguments as getopt reads them: what
the ssh, su and sudo methods look through for options that would keep a
context from starting (``-tt``, ``su -P``, ``sudo --list``)."""
from __future__ import absolute_import


def flags(args, takes_value, long_takes_value=()):
    """``(flag, word)`` for each option in *args*, in order: the letter of
    each one-letter option, the name ("--list") of each long one.  Values
    are skipped: the rest of a word after a letter in *takes_value*
    ("-p22"), or the next word ("-p 22"); the next word after a long option
    in *long_takes_value* written without "=" ("--user root").  Stops at
    "--"."""
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word == '--':
            return
        if word.startswith('--'):
            name = word.split('=')[0]
            yield name, word
            skip = name in long_takes_value and '=' not in word
            continue
        if not word.startswith('-') or word == '-':
            continue
        for i, letter in enumerate(word[1:]):
            yield letter, word
            if letter in takes_value:
                skip = i + 2 == len(word)  # nothing follows in this word
                break
