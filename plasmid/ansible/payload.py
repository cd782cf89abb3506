"""Read an AnsiballZ wrapper (a pipelined module's stdin) into a job.

ansible-core sends a new-style Python module as one script: a wrapper that
writes an embedded zip to a temp dir, puts it on ``sys.path`` and runs the
module with its arguments.  We take the script apart on the controller
instead, so the target receives the zip once per context and runs the
module from RAM (``plasmid/ansible/target.py``).

Two wrapper shapes exist among the supported releases:

* ``loader`` (ansible-core 2.19 and later): a function ``_ansiballz_main``
  called at the end with keyword arguments, one per line; the zip carries
  ``ansible.module_utils._internal._ansiballz._loader``, which runs it.
* ``legacy`` (2.18): a template with ``ZIPDATA = '...'``,
  ``ANSIBALLZ_PARAMS = '...'`` and the module's name in its
  ``runpy.run_module`` call.

Anything else (coverage runs, debuggers, a shape we do not know) yields
None, and the connection runs the script as it is, like vanilla does.
"""
from __future__ import annotations

import base64
import hashlib
import re
import string
from typing import Any, Optional

from plasmid.ansible.commands import compiled

MARKER = b'_ansiballz_main'
_CALL = b'\nif __name__ == "__main__":\n    _ansiballz_main(\n'
# The wrapper's keyword arguments we know how to pass on (2.22 added
# secrets); a call with any other is a shape we do not know.
_LOADER_KEYS = {'zip_data', 'ansible_module', 'module_fqn', 'params',
                'profile', 'date_time', 'extensions', 'rlimit_nofile',
                'secrets'}
_BASE64_ALPHABET = (string.ascii_letters + string.digits + '+/=').encode()
_FROZENSET = r'frozenset\((.*)\)'  # compiled on first use: commands.py
# 2.18's template: the lines that carry the zip and the arguments, each
# found with bytes.find (a regex would scan the 100 KiB literal per search)
_LEGACY_LINES = {'zip_data': b"\n    ZIPDATA = ",
                 'params': b"\n    ANSIBALLZ_PARAMS = "}
_LEGACY_FQN = (b"runpy.run_module(mod_name=",
               rb"runpy\.run_module\(mod_name=('[\w.]+'), init_globals=dict")
_LEGACY_NOFILE = (b"requested_soft = min(existing_hard, ",
                  rb"requested_soft = min\(existing_hard, (\d+)\)")
TASK_PATTERNS = (_FROZENSET, _LEGACY_FQN[1], _LEGACY_NOFILE[1])
# Zip literals met in this process: (length, head, tail) -> (the literal,
# its sha1).  The threaded strategy parses the same few in every task.
_SEEN_ZIPS: dict[tuple, tuple[bytes, str]] = {}
_SEEN_ZIPS_KEPT = 16


class ModuleJob:
    """What target.run_module needs, and the zip it runs from."""

    def __init__(self, style: str, interpreter: str, zip_b64: bytes,
                 digest: str, module_fqn: str, params: bytes,
                 profile: Optional[str] = None,
                 extensions: Optional[dict] = None,
                 rlimit_nofile: int = 0,
                 secrets: Optional[list] = None) -> None:
        self.style = style              # 'loader' or 'legacy'
        self.interpreter = interpreter  # from the shebang
        self.zip_b64 = zip_b64          # base64, as in the script
        # Names the payload: the sha1 of the text, so that a worker whose
        # context has the zip never decodes it.
        self.digest = digest
        self.module_fqn = module_fqn
        self.params = params
        self.profile = profile
        self.extensions = extensions or {}
        self.rlimit_nofile = rlimit_nofile
        # 2.22+: values the module must mask in what it prints
        self.secrets = secrets

    @property
    def zip_data(self) -> bytes:
        return base64.b64decode(self.zip_b64, validate=True)

    def to_target(self, env: dict) -> dict:
        job: dict[str, Any] = {
            'style': self.style, 'module_fqn': self.module_fqn,
            'params': self.params, 'extensions': self.extensions,
            'rlimit_nofile': self.rlimit_nofile, 'env': env,
        }
        if self.profile is not None:
            job['profile'] = self.profile
        if self.secrets is not None:
            job['secrets'] = self.secrets
        return job


def parse(script: bytes) -> Optional[ModuleJob]:
    """The job inside a pipelined AnsiballZ script, or None.

    The script is ~150 KiB, nearly all of it the zip's base64 literal, and
    this runs for every task: it is read as bytes, by position, so that
    the literal is never copied into a string.
    """
    if not script.startswith(b'#!') or script.find(MARKER, 0, 65536) < 0:
        return None
    newline = script.find(b'\n')
    try:
        interpreter = script[2:newline].decode('utf-8').strip()
    except UnicodeDecodeError:
        return None
    if not interpreter or ' ' in interpreter:
        return None
    call = script.rfind(_CALL)
    if call >= 0:
        # 2.19+ bring coverage in through `extensions`; the arguments
        # after the call (a module's own, say) may say what they like
        if _imports_coverage(script, newline, call):
            return None
        return _parse_loader(script, call + len(_CALL), interpreter)
    if _imports_coverage(script, newline, len(script)):
        return None
    return _parse_legacy(script, interpreter)


def _imports_coverage(script: bytes, start: int, end: int) -> bool:
    """Whether the wrapper's code runs under coverage (ansible-test), which
    only the script as it is can do."""
    return script.find(b'import coverage', start, end) >= 0


def _literal(text: str) -> Any:
    """A literal's value: a plain quoted one (no escapes, as repr() writes
    most of the wrapper's), a number or an empty dict read directly,
    anything else parsed."""
    text = text.strip()
    quote = text[:1]
    if quote in ('"', "'") and len(text) >= 2 and text[-1] == quote and \
            '\\' not in text and quote not in text[1:-1]:
        return text[1:-1]
    if text.isascii() and text.isdigit() and \
            (text[0] != '0' or text == '0'):  # rlimit_nofile
        return int(text)
    if text == '{}':  # extensions, nearly always
        return {}
    import ast  # only when a module runs: workers import this per task
    return ast.literal_eval(text)


def _base64_span(script: bytes, start: int, end: int) -> tuple[bytes, str]:
    """The base64 text of the quoted literal in ``script[start:end]``, and
    its sha1.  Matched, not parsed: literal_eval would compile 100 KiB."""
    while start < end and script[start] in b' \t':
        start += 1
    while end > start and script[end - 1] in b' \t\r':
        end -= 1
    quote = script[start:start + 1]
    if quote not in (b"'", b'"') or end - start < 2 or \
            script[end - 1:end] != quote:
        raise ValueError('not a quoted literal')
    return _named_base64(script[start + 1:end - 1])


def _named_base64(text: bytes) -> tuple[bytes, str]:
    """*text* and its sha1, if it is all base64.  A literal an earlier task
    brought (ansible-core sends one zip per module, task after task) comes
    back as it was kept then, checked and named once per process."""
    key = (len(text), text[:64], text[-64:])
    seen = _SEEN_ZIPS.get(key)
    if seen is not None and seen[0] == text:
        return seen
    if text.translate(None, _BASE64_ALPHABET):
        raise ValueError('not a base64 literal')
    if len(_SEEN_ZIPS) >= _SEEN_ZIPS_KEPT:
        for oldest in list(_SEEN_ZIPS)[:1]:  # a copy: task threads add too
            _SEEN_ZIPS.pop(oldest, None)
    named = _SEEN_ZIPS[key] = (text, hashlib.sha1(text).hexdigest())
    return named


def _argument_value(key: str, text: str) -> Any:
    """The value of one of the wrapper's arguments, from its literal."""
    if key == 'secrets':  # frozenset() or frozenset({'...', ...})
        match = compiled(_FROZENSET).fullmatch(text.strip())
        if match is None:
            raise ValueError('not a frozenset')
        return sorted(_literal(match.group(1))) if match.group(1) else []
    return _literal(text)


def _loader_arguments(script: bytes, start: int) -> Optional[dict]:
    """The keyword arguments of the wrapper's call, one per line from
    *start*; None if one is new to us or unreadable."""
    args: dict[str, Any] = {}
    end = len(script)
    while start < end:
        line_end = script.find(b'\n', start)
        if line_end < 0:
            line_end = end
        equals = script.find(b'=', start, line_end)
        value_end = line_end - 1 if script[line_end - 1:line_end] == b',' \
            else line_end
        if equals >= 0:
            key = script[start:equals].decode('latin-1')
            if key not in _LOADER_KEYS:
                return None  # a newer wrapper: run it as it is
            try:
                if key == 'zip_data':
                    args[key] = _base64_span(script, equals + 1, value_end)
                elif key != 'date_time':  # only dates a file in the zip
                    args[key] = _argument_value(key, script[
                        equals + 1:value_end].decode('utf-8'))
            except (ValueError, SyntaxError, UnicodeDecodeError):
                return None
        start = line_end + 1
    return args


def _parse_loader(script: bytes, start: int,
                  interpreter: str) -> Optional[ModuleJob]:
    args = _loader_arguments(script, start)
    if args is None or \
            not {'zip_data', 'module_fqn', 'params', 'profile'} <= set(args):
        return None
    if args.get('extensions'):
        return None  # coverage or a debugger: run the wrapper as it is
    zip_b64, digest = args['zip_data']
    return ModuleJob(
        style='loader', interpreter=interpreter, zip_b64=zip_b64,
        digest=digest, module_fqn=args['module_fqn'],
        params=args['params'].encode('utf-8'), profile=args['profile'],
        extensions=args.get('extensions') or {},
        rlimit_nofile=int(args.get('rlimit_nofile') or 0),
        secrets=args.get('secrets'))


def _line_value(script: bytes, prefix: bytes) -> Optional[tuple[int, int]]:
    """Where the rest of the line after *prefix* lies, if it is there."""
    start = script.find(prefix)
    if start < 0:
        return None
    start += len(prefix)
    end = script.find(b'\n', start)
    return start, len(script) if end < 0 else end


def _found(script: bytes, anchor: bytes,
           pattern: bytes) -> Optional[re.Match]:
    """*pattern* matched where *anchor* first occurs."""
    start = script.find(anchor)
    return None if start < 0 else compiled(pattern).match(script, start)


def _parse_legacy(script: bytes, interpreter: str) -> Optional[ModuleJob]:
    zip_span = _line_value(script, _LEGACY_LINES['zip_data'])
    params_span = _line_value(script, _LEGACY_LINES['params'])
    fqn = _found(script, *_LEGACY_FQN)
    if zip_span is None or params_span is None or fqn is None:
        return None
    try:
        zip_b64, digest = _base64_span(script, *zip_span)
        params = _literal(script[slice(*params_span)].decode('utf-8'))
        module_fqn = _literal(fqn.group(1).decode('utf-8'))
    except (ValueError, SyntaxError, UnicodeDecodeError):
        return None
    nofile = _found(script, *_LEGACY_NOFILE)
    return ModuleJob(
        style='legacy', interpreter=interpreter, zip_b64=zip_b64,
        digest=digest, module_fqn=module_fqn,
        params=params.encode('utf-8') if isinstance(params, str) else params,
        rlimit_nofile=int(nofile.group(1)) if nofile else 0)
