"""A program's one-letter options, read from its arguments as getopt reads
them: what the ssh and su methods look through for options that would
keep a context from starting (``-tt``, ``su -P``)."""
from __future__ import absolute_import


def option_words(args):
    """*args* up to a "--", after which no word is an option."""
    return args[:args.index('--')] if '--' in args else args


def short_flags(args, takes_value):
    """``(letter, word)`` for each one-letter option in *args*, in order;
    values are skipped: the rest of a word after a letter in *takes_value*
    ("-p22"), or the next word ("-p 22").  Stops at "--"; long options are
    not looked into."""
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word == '--':
            return
        if not word.startswith('-') or word.startswith('--') or word == '-':
            continue
        for i, letter in enumerate(word[1:]):
            yield letter, word
            if letter in takes_value:
                skip = i + 2 == len(word)  # nothing follows in this word
                break
