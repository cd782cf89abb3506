"""Files through the accelerator: a small copy costs one round trip beyond
the module, a large file streams with a bounded window, fetches to one path
stay whole, and a result beyond one message's limit arrives."""
from __future__ import annotations

import base64
import os
import time

import pytest

from parity import STRATEGY, assert_same
from runner import PASSWORD, inventory, run_playbook
from testbed.accounts import USER_B


COPIES = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: small files
      copy: content="file {{ item }} {{ tag }}\\n" dest=/tmp/plasmid-copies-{{ tag }}-{{ item }}
      become: true
      loop: [1, 2, 3, 4, 5]
    - name: read one back
      command: cat /tmp/plasmid-copies-{{ tag }}-3
      register: back
    - name: clean up
      shell: rm -f /tmp/plasmid-copies-{{ tag }}-*
      become: true
"""


def test_small_copy_costs_one_round_trip_beyond_the_module(
        ansible_bin, ansible_account, sshd, tmp_path):
    inv = inventory(sshd, ansible_account)
    tag = 'rt%d' % time.time()
    ours = run_playbook(ansible_bin, tmp_path, COPIES, inv, True,
                        args=('-e', 'tag=' + tag))
    assert ours.rc == 0, ours.output
    back = [r for r in ours.results if r['task'] == 'read one back']
    assert back[0]['result']['stdout'] == 'file 3 %s' % tag
    # Each copy: the stat module and the copy module wait for an answer;
    # the temp dir, the file and the clean-up go ahead without waiting.
    # Plus one look-up of the home directory, the first temp dir (made
    # while the worker waits: its failure must read as vanilla's), and
    # the two other tasks.
    assert ours.stats['round_trips'] <= 2 * 5 + 2 + 2, ours.stats
    assert ours.stats['sent_ahead'] >= 3 * 5 - 1, ours.stats
    # The temp dirs after the first, the chmods and the removals: done by
    # the login's context itself, no shell started (chores.py).
    assert ours.stats.get('chores_native', 0) >= 3 * 5 - 1, ours.stats
    assert 'chores_shell' not in ours.stats, ours.stats


LARGE_FILE = """
- hosts: targets
  gather_facts: false
  vars:
    dest: /tmp/plasmid-large-{{ run_tag }}
  tasks:
    - name: copy a large file
      copy: src=large.bin dest={{ dest }} mode=0600
    - name: copy it again, unchanged
      copy: src=large.bin dest={{ dest }} mode=0600
    - name: fetch it back
      fetch: src={{ dest }} dest={{ playbook_dir }}/back-{{ run_tag }} flat=true
    - name: clean up
      file: path={{ dest }} state=absent
"""


@pytest.mark.edge_releases
def test_a_large_file_streams_with_a_bounded_window(ansible_bin,
                                                    ansible_account, sshd,
                                                    tmp_path):
    """A file of several chunks arrives whole, read by the broker and sent
    ahead at most broker.WINDOW chunks at a time, and comes back whole,
    read ahead by the same window; results as vanilla's."""
    from plasmid.ansible import broker
    chunks = broker.WINDOW + 2
    data = os.urandom(broker.FILE_CHUNK * (chunks - 1) + 12345)
    (tmp_path / 'large.bin').write_bytes(data)
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, LARGE_FILE, inv, False,
                           args=('-e', 'run_tag=large'))
    assert vanilla.rc == 0, vanilla.output
    assert (tmp_path / 'back-large').read_bytes() == data
    (tmp_path / 'back-large').unlink()   # fetched afresh by the next run
    ours = run_playbook(ansible_bin, tmp_path, LARGE_FILE, inv, True,
                        args=('-e', 'run_tag=large'))
    assert_same(vanilla, ours)
    assert (tmp_path / 'back-large').read_bytes() == data
    # The unchanged second copy sends nothing.
    assert ours.stats['file_chunks_put'] == chunks, ours.stats
    assert ours.stats['most_in_flight'] == broker.WINDOW, ours.stats
    assert ours.stats['file_chunks_fetched'] == chunks, ours.stats
    assert ours.stats['most_reads_ahead'] == broker.WINDOW, ours.stats


FLAT_FETCH = """
- hosts: targets
  gather_facts: false
  vars:
    copied: /tmp/plasmid-flat-{{ run_tag }}-{{ inventory_hostname }}
  tasks:
    - name: a file on each host
      copy: src=large.bin dest={{ copied }}
    - name: all fetched to one path
      fetch: src={{ copied }} dest={{ playbook_dir }}/back-{{ item }} flat=true
      loop: [1, 2, 3, 4, 5, 6, 7, 8]
    - name: clean up
      file: path={{ copied }} state=absent
"""


def test_hosts_fetching_to_one_path_on_threads_each_see_a_whole_file(
        ansible_bin, ansible_account, sshd, tmp_path):
    """With the strategy, hosts fetch at once in one process: each file
    takes the path's place when whole, so no host checksums another's
    half-written one (that failed "checksum mismatch")."""
    data = os.urandom(100000)
    (tmp_path / 'large.bin').write_bytes(data)
    inv = inventory(sshd, ansible_account, hosts=('t1', 't2', 't3', 't4'))
    ours = run_playbook(ansible_bin, tmp_path, FLAT_FETCH, inv, True,
                        STRATEGY, args=('-e', 'run_tag=%d' % os.getpid()))
    assert ours.rc == 0, ours.output
    fetched = [r for r in ours.results if r['task'] == 'all fetched to one path']
    assert [r['status'] for r in fetched] == ['ok'] * 4, ours.output
    for item in range(1, 9):
        assert (tmp_path / ('back-%d' % item)).read_bytes() == data
    assert not [name for name in os.listdir(tmp_path) if 'plasmid-' in name]


# A file whose base64 is over the core's default message limit (64 MiB).
LARGE_RESULT_BYTES = 52 * 1000 * 1000
LARGE_RESULT = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: read a large file
      slurp: src={{ big_file }}
      become: true
      register: big
    - name: all of it arrived
      assert:
        that: big.content | length == %d
""" % (4 * ((LARGE_RESULT_BYTES + 2) // 3))


@pytest.mark.edge_releases
def test_a_result_above_the_default_message_limit_arrives(
        ansible_bin, ansible_account, sshd, tmp_path):
    """A result larger than the broker's hold_above (64 MiB, the core's
    default message limit) stays in the context and comes over in pieces;
    it arrives whole (vanilla takes it too)."""
    from plasmid.ansible.broker import FILE_CHUNK
    from plasmid.core.framing import DEFAULT_MAX_MESSAGE
    data = os.urandom(LARGE_RESULT_BYTES)
    assert len(base64.b64encode(data)) > DEFAULT_MAX_MESSAGE
    big_file = tmp_path / 'big.bin'
    big_file.write_bytes(data)
    inv = inventory(sshd, ansible_account)
    # The file itself is the reference: vanilla would take three times
    # as long to read it.
    ours = run_playbook(ansible_bin, tmp_path, LARGE_RESULT, inv, True,
                        args=('-e', 'big_file=%s' % big_file))
    assert ours.rc == 0, ours.output
    read = ours.by_task()[('t1', 'read a large file')]['result']
    assert read['encoding'] == 'base64', read.keys()
    assert base64.b64decode(read['content']) == data
    assert ours.stats['result_chunks'] >= \
        len(read['content']) // FILE_CHUNK, ours.stats


MODES = """
- hosts: targets
  gather_facts: false
  vars:
    base: /tmp/plasmid-modes-{{ tag }}
    ansible_become_password: %(password)s
  tasks:
    - name: a folder for all
      file: path={{ base }} state=directory mode=0777
    - name: the file to replace
      copy: content=old dest={{ base }}/replaced mode=0640
      become: true
      become_user: %(user_b)s
    - name: replaced by a private file
      copy: src=private.txt dest={{ base }}/replaced
      become: true
      become_user: %(user_b)s
    - name: its mode
      stat: path={{ base }}/replaced
      register: replaced
    - name: files to fetch
      copy: content=x dest={{ base }}/{{ item }} mode={{ item }}
      loop: ['0600', '0640', '0755', '0444']
    - name: fetched
      fetch: src={{ base }}/{{ item }} dest={{ playbook_dir }}/fetched-{{ tag }}/{{ item }} flat=true
      loop: ['0600', '0640', '0755', '0444']
    - name: clean up
      file: path={{ base }} state=absent
      become: true
"""


@pytest.mark.edge_releases
def test_copied_and_fetched_files_get_vanillas_modes(
        ansible_bin, ansible_account, sshd_with_sftp, tmp_path):
    """Vanilla's sftp makes a file with its source's permission bits (less
    the umask); ours made it with open()'s: a fetched private file came
    out readable by all, and a copy as an unprivileged become user, which
    cannot chmod the file it is given, left it 0o654 where vanilla's is
    0o650."""
    (tmp_path / 'private.txt').write_text('private\n')
    os.chmod(tmp_path / 'private.txt', 0o600)
    inv = inventory(sshd_with_sftp, ansible_account)
    book = MODES % {'password': PASSWORD, 'user_b': USER_B}
    modes = {}
    for accelerated in (False, True):
        tag = 'modes-%s-%d' % (accelerated, os.getpid())
        run = run_playbook(ansible_bin, tmp_path, book, inv, accelerated,
                           args=('-e', 'tag=' + tag))
        assert run.rc == 0, run.output
        replaced = [r['result']['stat']['mode'] for r in run.results
                    if r['task'] == 'its mode']
        fetched = tmp_path / ('fetched-' + tag)
        modes[accelerated] = (replaced, {
            name: oct(os.stat(fetched / name).st_mode & 0o777)
            for name in os.listdir(fetched)})
    assert modes[True] == modes[False]
    # What vanilla gives: the fetched files keep their modes, with
    # owner write, less the umask.
    umask = os.umask(0)
    os.umask(umask)
    assert modes[False][1] == {
        mode: oct((int(mode, 8) | 0o200) & ~umask)  # owner write added
        for mode in ('0600', '0640', '0755', '0444')}, modes
