"""plasmid.ansible.warm in real contexts: the process-wide caches a fork
inherits are filled without changing the context's own state."""
from __future__ import annotations

import pytest

import plasmid
from plasmid.ansible import warm
from testbed.pythons import require_python

import target_fns


@pytest.mark.parametrize('version', ['2.7', '3.8', '3.13'])
def test_filling_the_caches_leaves_the_context_locale_alone(version):
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        before = ctx.call(target_fns.current_locale)
        ctx.call(warm.fill_process_caches)
        ctx.call(warm.fill_process_caches)     # the locale part runs once
        assert ctx.call(target_fns.current_locale) == before


@pytest.mark.parametrize('version', ['3.8', '3.13'])
def test_the_abc_caches_answer_for_built_in_types(version):
    """After the fill, Mapping already knows that int is not one of its
    subclasses and that dict is: a fork asks nothing again."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(target_fns.mapping_cache_knows, 'int') is False
        ctx.call(warm.fill_process_caches)
        assert ctx.call(target_fns.mapping_cache_knows, 'int') is True
        assert ctx.call(target_fns.mapping_cache_knows, 'dict') is True
