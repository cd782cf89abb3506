"""Taking AnsiballZ wrappers apart (the script shapes, not ansible-core:
the playbook tests run the real ones of each release)."""
from __future__ import annotations

import base64
import io
import zipfile

import pytest

from plasmid.ansible import payload


def a_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, 'w') as archive:
        archive.writestr('ansible/modules/ping.py', 'print("pong")\n')
    return buffer.getvalue()


def loader_script(zip_literal: str, more: str = '') -> bytes:
    return ('#!/usr/bin/python3\n'
            'def _ansiballz_main(**kw):\n    pass\n'
            '\nif __name__ == "__main__":\n    _ansiballz_main(\n'
            'zip_data=%s,\n'
            "ansible_module='ping',\n"
            "module_fqn='ansible.modules.ping',\n"
            "params='{\"ANSIBLE_MODULE_ARGS\": {}}',\n"
            "profile='legacy',\n"
            'date_time=datetime.datetime(2026, 11, 22, 0, 0, 0),\n'
            'extensions={},\n'
            '%s'
            '    )\n' % (zip_literal, more)).encode('utf-8')


def test_the_zip_is_named_without_decoding_and_decoded_on_demand():
    data = a_zip()
    text = base64.b64encode(data).decode('ascii')
    job = payload.parse(loader_script("'%s'" % text))
    assert job is not None and job.style == 'loader'
    assert job.module_fqn == 'ansible.modules.ping'
    assert job.zip_data == data
    other = payload.parse(loader_script("'%s'" % base64.b64encode(
        data + b'\0').decode('ascii')))
    assert other.digest != job.digest
    assert payload.parse(loader_script("'%s'" % text)).digest == job.digest


def test_a_zip_literal_that_is_not_plain_base64_falls_back():
    """Anything but a quoted base64 literal (an expression, say) is a shape
    we do not know: None, and the script runs as it is."""
    text = base64.b64encode(a_zip()).decode('ascii')
    assert payload.parse(loader_script("'%s' + ''" % text)) is None
    assert payload.parse(loader_script("'%s\\n'" % text)) is None


def test_secrets_of_2_22_are_passed_on():
    """2.22's wrapper names the values the module must mask; the job
    carries them (none: an empty list; before 2.22: absent)."""
    text = "'%s'" % base64.b64encode(a_zip()).decode('ascii')
    job = payload.parse(loader_script(
        text, "secrets=frozenset({'s3cret', 'hunter2'}),\n"))
    assert job.to_target({})['secrets'] == ['hunter2', 's3cret']
    job = payload.parse(loader_script(text, 'secrets=frozenset(),\n'))
    assert job.to_target({})['secrets'] == []
    assert 'secrets' not in payload.parse(loader_script(text)).to_target({})


def test_an_argument_we_do_not_know_falls_back():
    """A newer wrapper may pass what we would drop: run it as it is."""
    text = "'%s'" % base64.b64encode(a_zip()).decode('ascii')
    assert payload.parse(loader_script(text, "flavour='new',\n")) is None


def test_argument_literals_read_directly_or_parsed_give_the_same_value():
    """Plain literals are read without ast; every literal repr() writes
    must still come back as the value it was made from."""
    values = ['', 'plain', '{"ANSIBLE_MODULE_ARGS": {"a": [1, "x"]}}',
              "it's", 'both \' and "', 'back\\slash', 'new\nline',
              'tab\there', 'ünïcode ✓', "'", '"']
    for value in values:
        assert payload._literal(repr(value)) == value, value
        assert payload._literal('  %r  ' % value) == value, value
    assert payload._literal("b'bytes'") == b'bytes'
    for value in [0, 4096, {}, {'a': 1}, -1, 1.5]:  # rlimit_nofile, extensions
        assert payload._literal(repr(value)) == value, value
    with pytest.raises(SyntaxError):  # not Python: no value, as ast says
        payload._literal('007')


def test_the_zip_literal_may_use_either_quote_but_nothing_else():
    data = a_zip()
    text = base64.b64encode(data).decode('ascii')
    job = payload.parse(loader_script('"%s"' % text))
    assert job is not None and job.zip_data == data
    assert payload.parse(loader_script("'%s\"" % text)) is None
    assert payload.parse(loader_script("'%s %s'" % (text, text))) is None


def test_a_module_argument_may_say_import_coverage():
    """Only the wrapper's own code running under coverage makes the script
    run as it is; a module's arguments after the call may say anything."""
    text = "'%s'" % base64.b64encode(a_zip()).decode('ascii')
    script = loader_script(text).replace(
        b'"ANSIBLE_MODULE_ARGS": {}', b'"ANSIBLE_MODULE_ARGS": '
        b'{"_raw_params": "echo import coverage"}')
    job = payload.parse(script)
    assert job is not None and b'import coverage' in job.params
    wrapped = script.replace(b'    pass\n', b'    import coverage\n', 1)
    assert payload.parse(wrapped) is None


def test_a_zip_literal_met_again_is_checked_and_named_once(monkeypatch):
    """Task after task brings the same literal: the second parse hands back
    the kept text and digest without hashing; a literal that differs only
    in its middle is told apart, and one that is not base64 there is
    refused."""
    hashed = []
    real_sha1 = payload.hashlib.sha1

    def counting_sha1(data):
        hashed.append(len(data))
        return real_sha1(data)
    monkeypatch.setattr(payload, '_SEEN_ZIPS', {})
    monkeypatch.setattr(payload.hashlib, 'sha1', counting_sha1)
    text = base64.b64encode(a_zip() * 3).decode('ascii')
    first = payload.parse(loader_script("'%s'" % text))
    again = payload.parse(loader_script("'%s'" % text))
    assert len(hashed) == 1
    assert again.zip_b64 is first.zip_b64 and again.digest == first.digest
    middle = len(text) // 2
    swapped = 'A' if text[middle] != 'A' else 'B'
    other = text[:middle] + swapped + text[middle + 1:]
    changed = payload.parse(loader_script("'%s'" % other))
    assert changed.digest == real_sha1(other.encode()).hexdigest()
    assert changed.digest != first.digest and len(hashed) == 2
    broken = text[:middle] + '!' + text[middle + 1:]
    assert payload.parse(loader_script("'%s'" % broken)) is None


def test_the_kept_literals_stay_few(monkeypatch):
    monkeypatch.setattr(payload, '_SEEN_ZIPS', {})
    for n in range(payload._SEEN_ZIPS_KEPT + 5):
        text = base64.b64encode(a_zip() + b'\0' * n).decode('ascii')
        assert payload.parse(loader_script("'%s'" % text)) is not None
    assert len(payload._SEEN_ZIPS) == payload._SEEN_ZIPS_KEPT
