"""What `pip install plasmid` installs: the package and the accelerator's
collection, where ansible-core looks for collections (sys.path)."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COLLECTION_FILES = {
    'ansible_collections/plasmid/accel/galaxy.yml',
    'ansible_collections/plasmid/accel/meta/runtime.yml',
    'ansible_collections/plasmid/accel/plugins/connection/ssh.py',
    # ansible-doc and ansible-core's own parse read the shared options here
    'ansible_collections/plasmid/accel/plugins/doc_fragments/pipelining.py',
    'ansible_collections/plasmid/accel/plugins/strategy/linear.py',
    'plasmid/ansible/target.py',
    'plasmid/core/router.py',
}


def test_the_wheel_carries_the_collection(tmp_path):
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps',
                    '-q', '-w', str(tmp_path),
                    REPO], check=True, cwd=str(tmp_path),
                   env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK='1'))
    wheels = [p for p in os.listdir(tmp_path) if p.endswith('.whl')]
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(tmp_path / wheels[0]) as wheel:
        names = set(wheel.namelist())
    assert COLLECTION_FILES <= names, COLLECTION_FILES - names
    # Nothing from the checkout that is not the library.
    assert not [n for n in names if n.startswith(('tests/', 'bench/'))]
