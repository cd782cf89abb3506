"""plasmid/ansible/listing_cache.py: the plugin loader's directory listings,
kept while a directory is unchanged.  Counts real listings (calls of the
glob module's functions), never times.  The loader's use of the ``glob``
module global is private ansible-core API, checked in each release's venv.
"""
from __future__ import annotations

import json

from runner import run_probe

# In each release: installed once, the loader's lookups of a module and of
# every connection plugin list their directories once, and find what the
# real glob finds.
LOADER_PROBE = """
import glob, json
from ansible.plugins import loader
from plasmid.ansible import listing_cache

real = {'calls': 0}
def counted(name):
    original = getattr(glob, name)
    def call(*args, **kwargs):
        real['calls'] += 1
        return original(*args, **kwargs)
    setattr(glob, name, call)
counted('glob'); counted('iglob')

def lookups():
    found = loader.module_loader.find_plugin_with_context('command')
    names = sorted(p._load_name for p in
                   loader.connection_loader.all(class_only=True))
    return found.plugin_resolved_path, names

before = lookups()
calls_uncached = real['calls']
cached = listing_cache.install()
again = listing_cache.install()
first = lookups()
calls_first = real['calls']
for _ in range(20):
    last = lookups()
print(json.dumps({
    'installed': isinstance(loader.glob, listing_cache.CachedGlob),
    'once': cached is again,
    'same_answers': before == first == last,
    'found_command': (first[0] or '').endswith('command.py'),
    'uncached_calls_per_round': calls_uncached,
    'calls_in_20_rounds': real['calls'] - calls_first,
}))
"""

MOVED_PROBE = """
from ansible.plugins import loader
from plasmid.ansible import listing_cache
loader.glob = None  # as if a release stopped importing glob there
print(listing_cache.install() is None, loader.glob is None)
"""

# On directories of the test's own: what is kept, and when it is listed
# again.  *now* is the clock CachedGlob compares timestamps with.
DIRECTORY_PROBE = """
import glob, json, os, sys, time
from plasmid.ansible import listing_cache

root = sys.argv[1]
settled = os.path.join(root, 'settled')
fresh = os.path.join(root, 'fresh')
for d in (settled, fresh):
    os.mkdir(d)
    for name in ('a.py', 'b.py', 'c.txt', '.hidden.py'):
        open(os.path.join(d, name), 'w').close()
later = listing_cache.CachedGlob(now=lambda: time.time() + 10)
results = {}

# A settled directory is listed once, however often it is asked.
pattern = os.path.join(settled, '*.py')
answers = [sorted(later.glob(pattern)) for _ in range(5)]
answers.append(sorted(later.iglob(pattern)))
results['settled_listings'] = later.listings
results['settled_answers_same'] = all(a == answers[0] for a in answers)
results['settled_answer'] = [os.path.basename(p) for p in answers[0]]
results['matches_real_glob'] = answers[0] == sorted(glob.glob(pattern))

# A new entry changes the directory's timestamps: listed again.
open(os.path.join(settled, 'd.py'), 'w').close()
os.utime(settled, ns=(10**9, 10**9))  # whatever tick the add fell in
results['after_add'] = sorted(os.path.basename(p)
                              for p in later.glob(pattern))
results['listings_after_add'] = later.listings

# A directory changed within SETTLED_SECONDS is never kept.
now = listing_cache.CachedGlob()
for _ in range(3):
    now.glob(os.path.join(fresh, '*.py'))
results['fresh_listings'] = now.listings

# Patterns it does not keep go to the real glob every time.
other = listing_cache.CachedGlob(now=lambda: time.time() + 10)
for _ in range(3):
    other.glob(os.path.join(root, '*', '*.py'))  # wildcard in the directory
    other.glob(pattern, recursive=True)          # keyword arguments
    other.glob('*.py')                           # no directory part
results['other_listings'] = other.listings
# Under a missing directory: nothing, kept while the nearest existing
# directory above it is unchanged; found once the directory is made.
absent = os.path.join(root, 'absent', 'deeper')
wanted = [os.path.join(absent, '*'), os.path.join(absent, '*', '*')]
missing = listing_cache.CachedGlob(now=lambda: time.time() + 10)
results['missing'] = [missing.glob(w) for w in wanted for _ in range(3)]
results['missing_listings'] = missing.listings
os.makedirs(os.path.join(absent, 'sub'))
open(os.path.join(absent, 'sub', 'e.py'), 'w').close()
os.utime(root, ns=(2 * 10**9, 2 * 10**9))  # whatever tick the mkdir fell in
results['made'] = [[os.path.relpath(p, absent) for p in missing.glob(w)]
                   for w in wanted]
results['escape_is_globs'] = later.escape is glob.escape
print(json.dumps(results))
"""


def test_each_release_lists_plugin_directories_once(ansible_bin):
    found = json.loads(run_probe(ansible_bin, LOADER_PROBE))
    assert found['installed'] and found['once'], found
    assert found['same_answers'] and found['found_command'], found
    # Without the cache a round of lookups lists directories every time;
    # with it, twenty rounds list none.
    assert found['uncached_calls_per_round'] > 0, found
    assert found['calls_in_20_rounds'] == 0, found


def test_a_release_that_moved_glob_runs_without_the_cache(ansible_bin):
    assert run_probe(ansible_bin, MOVED_PROBE).split() == ['True', 'True']


def test_kept_listings_follow_their_directory(newest_ansible_bin, tmp_path):
    found = json.loads(run_probe(newest_ansible_bin, DIRECTORY_PROBE,
                                 str(tmp_path)))
    assert found['settled_listings'] == 1, found
    assert found['settled_answers_same'], found
    assert found['settled_answer'] == ['a.py', 'b.py'], found
    assert found['matches_real_glob'], found
    assert found['after_add'] == ['a.py', 'b.py', 'd.py'], found
    assert found['listings_after_add'] == 2, found
    assert found['fresh_listings'] == 3, found
    assert found['other_listings'] == 0, found
    assert found['missing'] == [[]] * 6, found
    assert found['missing_listings'] == 2, found  # one per pattern
    assert found['made'] == [['sub'], ['sub/e.py']], found
    assert found['escape_is_globs'], found
