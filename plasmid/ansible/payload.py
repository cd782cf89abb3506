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
from typing import Any, Optional

MARKER = b'_ansiballz_main'
_CALL = '\nif __name__ == "__main__":\n    _ansiballz_main(\n'
# The wrapper's keyword arguments we know how to pass on (2.22 added
# secrets); a call with any other is a shape we do not know.
_LOADER_KEYS = {'zip_data', 'ansible_module', 'module_fqn', 'params',
                'profile', 'date_time', 'extensions', 'rlimit_nofile',
                'secrets'}
_FROZENSET = re.compile(r'frozenset\((.*)\)')
_LEGACY = {
    'zip_data': re.compile(r"^    ZIPDATA = ('[^'\n]*')$", re.M),
    'params': re.compile(r"^    ANSIBALLZ_PARAMS = ('.*')$", re.M),
    'module_fqn': re.compile(r"runpy\.run_module\(mod_name=('[\w.]+'), "
                             r"init_globals=dict"),
}
_LEGACY_NOFILE = re.compile(r"requested_soft = min\(existing_hard, (\d+)\)")


class ModuleJob:
    """What target.run_module needs, and the zip it runs from."""

    def __init__(self, style: str, interpreter: str, zip_text: str,
                 module_fqn: str, params: bytes,
                 profile: Optional[str] = None,
                 extensions: Optional[dict] = None,
                 rlimit_nofile: int = 0,
                 secrets: Optional[list] = None) -> None:
        self.style = style              # 'loader' or 'legacy'
        self.interpreter = interpreter  # from the shebang
        self.zip_text = zip_text        # base64, as in the script
        # Names the payload; computed from the text, so that a worker
        # whose context has the zip never decodes it.
        self.digest = hashlib.sha1(zip_text.encode('ascii')).hexdigest()
        self.module_fqn = module_fqn
        self.params = params
        self.profile = profile
        self.extensions = extensions or {}
        self.rlimit_nofile = rlimit_nofile
        # 2.22+: values the module must mask in what it prints
        self.secrets = secrets

    @property
    def zip_data(self) -> bytes:
        return base64.b64decode(self.zip_text, validate=True)

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
    """The job inside a pipelined AnsiballZ script, or None."""
    if MARKER not in script[:65536] or not script.startswith(b'#!'):
        return None
    try:
        text = script.decode('utf-8')
    except UnicodeDecodeError:
        return None
    shebang, _, body = text.partition('\n')
    interpreter = shebang[2:].strip()
    if not interpreter or ' ' in interpreter or 'import coverage' in body:
        return None
    if _CALL in body:
        job = _parse_loader(body, interpreter)
    else:
        job = _parse_legacy(body, interpreter)
    return job


def _literal(text: str) -> Any:
    import ast  # only when a module runs: workers import this per task
    return ast.literal_eval(text)


_BASE64 = re.compile(r"(['\"])([A-Za-z0-9+/=]*)\1")


def _base64_literal(text: str) -> str:
    """The base64 text of a quoted literal.  The zip's literal is most of
    the script: matched, not parsed (literal_eval would compile 100 KiB of
    it every task)."""
    match = _BASE64.fullmatch(text.strip())
    if match is None:
        raise ValueError('not a base64 literal')
    return match.group(2)


def _argument_value(key: str, text: str) -> Any:
    """The value of one of the wrapper's arguments, from its literal."""
    if key == 'zip_data':
        return _base64_literal(text)
    if key == 'secrets':  # frozenset() or frozenset({'...', ...})
        match = _FROZENSET.fullmatch(text.strip())
        if match is None:
            raise ValueError('not a frozenset')
        return sorted(_literal(match.group(1))) if match.group(1) else []
    return _literal(text)


def _parse_loader(body: str, interpreter: str) -> Optional[ModuleJob]:
    args: dict[str, Any] = {}
    for line in body.rpartition(_CALL)[2].splitlines():
        key, sep, value = line.partition('=')
        if not sep:
            continue
        if key not in _LOADER_KEYS:
            return None  # a newer wrapper: run it as it is
        if key == 'date_time':
            continue  # only used to date a file inside the zip
        try:
            args[key] = _argument_value(key, value.rstrip(','))
        except (ValueError, SyntaxError):
            return None
    if not {'zip_data', 'module_fqn', 'params', 'profile'} <= set(args):
        return None
    if args.get('extensions'):
        return None  # coverage or a debugger: run the wrapper as it is
    return ModuleJob(
        style='loader', interpreter=interpreter, zip_text=args['zip_data'],
        module_fqn=args['module_fqn'],
        params=args['params'].encode('utf-8'), profile=args['profile'],
        extensions=args.get('extensions') or {},
        rlimit_nofile=int(args.get('rlimit_nofile') or 0),
        secrets=args.get('secrets'))


def _parse_legacy(body: str, interpreter: str) -> Optional[ModuleJob]:
    found = {}
    for key, pattern in _LEGACY.items():
        match = pattern.search(body)
        if match is None:
            return None
        try:
            found[key] = _argument_value(key, match.group(1))
        except (ValueError, SyntaxError):
            return None
    nofile = _LEGACY_NOFILE.search(body)
    params = found['params']
    return ModuleJob(
        style='legacy', interpreter=interpreter, zip_text=found['zip_data'],
        module_fqn=found['module_fqn'],
        params=params.encode('utf-8') if isinstance(params, str) else params,
        rlimit_nofile=int(nofile.group(1)) if nofile else 0)
