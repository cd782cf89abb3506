"""ansible-core's housekeeping commands done by the context itself
(plasmid/ansible/chores.py) end as the shell's run of them does: each
case below is set up twice, run once by ``/bin/sh`` (target.run_shell) and
once by the chore, and both outcomes (answer or error, and every path's
type and mode afterwards) must be the same; the chore must also have
taken the way (native or the shell) the case expects."""
from __future__ import annotations

import os

import pytest

import plasmid
from plasmid.ansible import chores, commands, target
from testbed.pythons import require_python

import chores_fns

TMP = 'tmp'
TASK = 'tmp/ansible-tmp-1764500000.5-123-456'


def mkdtemp_line(base: str, name: str) -> str:
    """The temp dir's command as ansible-core's sh shell plugin writes it."""
    line = ('( umask 77 && mkdir -p "` echo {base} `"&& mkdir "` echo '
            '{base}/{name} `" && echo {name}="` echo {base}/{name} `" )')
    return line.format(base=base, name=name)


def run_by_shell(ctx, line: str):
    """The outcome of *line* as the broker ran it before chores: by the
    shell, a failure of the checked ones raised."""
    if commands.housekeeping(line).kind == 'cleanup':
        return ctx.call(target.run_shell, line)
    try:
        return ('answer', ctx.call(target.run_shell_checked, line))
    except plasmid.CallError as exc:
        return ('error', _first_line(exc))


def run_as_chore(ctx, line: str):
    """(how, outcome) of *line* done as the broker does it now."""
    chore = commands.housekeeping(line)
    if chore.kind == 'cleanup':
        how, answer = ctx.call(chores.remove_tree, line, chore.paths[0])
        return how, tuple(answer)
    if chore.kind == 'mkdtemp':
        call = (chores.make_dir, line, chore.base, chore.name)
    else:
        call = (chores.add_owner_mode, line, chore.bits, list(chore.paths))
    try:
        how, answer = ctx.call(*call)
    except plasmid.CallError as exc:  # only the shell's run raises
        return chores.SHELL, ('error', _first_line(exc))
    return how, ('answer', answer)


def _first_line(exc: plasmid.CallError) -> str:
    """The error without the remote traceback below it (which names
    different functions for the two ways)."""
    return str(exc).splitlines()[0]


def compare(ctx, root: str, entries: list, line: str) -> str:
    """Run *line* both ways on the same tree; return how the chore went."""
    ctx.call(chores_fns.build, root, entries)
    by_shell = run_by_shell(ctx, line), ctx.call(chores_fns.state, root)
    ctx.call(chores_fns.build, root, entries)
    how, outcome = run_as_chore(ctx, line)
    as_chore = outcome, ctx.call(chores_fns.state, root)
    assert as_chore == by_shell, (line, how)
    return how


def cases(root: str) -> list:
    """(name, tree, command line, how on Python 3, how on Python 2.7)."""
    base = os.path.join(root, TMP)
    name = os.path.basename(TASK)
    task = os.path.join(root, TASK)
    made = [(TMP, 'dir', 0o700)]
    return [
        ('a new temp dir', made, mkdtemp_line(base, name),
         'native', 'shell'),  # 2.7 cannot tell whether an ACL applies
        ('the temp dir exists', made + [(TASK, 'dir', 0o755)],
         mkdtemp_line(base, name), 'shell', 'shell'),
        ('the base is gone', [], mkdtemp_line(base, name), 'shell', 'shell'),
        ('the base is a file', [(TMP, 'file', 0o600)],
         mkdtemp_line(base, name), 'shell', 'shell'),
        ('the files made executable',
         made + [(TASK, 'dir', 0o700), (TASK + '/source', 'file', 0o600),
                 (TASK + '/other', 'file', 0o000)],
         'chmod u+rwx %s/ %s/source' % (task, task), 'native', 'native'),
        ('a file made readable', made + [(TASK, 'dir', 0o700),
                                         (TASK + '/source', 'file', 0o000)],
         'chmod u+r %s/source' % task, 'native', 'native'),
        ('through a symbolic link',
         made + [(TASK, 'dir', 0o700), (TASK + '/real', 'file', 0o640),
                 (TASK + '/source', 'link:real', 0)],
         'chmod u+x %s/source' % task, 'native', 'native'),
        ('a file that is not there', made + [(TASK, 'dir', 0o700)],
         'chmod u+rwx %s/ %s/source' % (task, task), 'shell', 'shell'),
        ('the temp dir removed',
         made + [(TASK, 'dir', 0o700), (TASK + '/sub', 'dir', 0o500),
                 (TASK + '/sub/file', 'file', 0o000),
                 (TASK + '/link', 'link:/etc', 0)],
         'rm -f -r %s/ > /dev/null 2>&1' % task, 'native', 'native'),
        ('nothing to remove', made,
         'rm -f -r %s/ > /dev/null 2>&1' % task, 'native', 'native'),
        ('the temp dir is a symbolic link',
         made + [('elsewhere', 'dir', 0o700),
                 ('elsewhere/file', 'file', 0o600),
                 (TASK, 'link:../elsewhere', 0)],
         'rm -f -r %s/ > /dev/null 2>&1' % task, 'shell', 'shell'),
        ('the base is a file, to remove', [(TMP, 'file', 0o600)],
         'rm -f -r %s/ > /dev/null 2>&1' % task, 'shell', 'shell'),
    ]


@pytest.mark.parametrize('version', ['2.7', '3.8', '3.13'])
def test_each_chore_ends_as_its_shell_command_does(version, tmp_path):
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        root = str(tmp_path / 'tree')
        for name, entries, line, how3, how2 in cases(root):
            how = compare(ctx, root, entries, line)
            assert how == (how2 if version == '2.7' else how3), name


@pytest.mark.parametrize('version', ['3.8', '3.13'])
def test_a_default_acl_or_an_odd_umask_give_the_shells_modes(version,
                                                             tmp_path):
    """With a default ACL on the base, the ACL (not ``umask 77``) sets the
    new dir's mode: the shell makes it.  A context whose umask takes the
    owner's bits still makes it 0700, as ``umask 77`` does."""
    root = str(tmp_path / 'tree')
    base = os.path.join(root, TMP)
    line = mkdtemp_line(base, os.path.basename(TASK))
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert compare(ctx, root, [(TMP, 'acl-dir', 0o755)], line) == 'shell'
        before = ctx.call(chores_fns.set_umask, 0o277)
        try:
            assert compare(ctx, root, [(TMP, 'dir', 0o700)], line) == \
                'native'
        finally:
            ctx.call(chores_fns.set_umask, before)


def test_what_the_login_may_not_do_fails_as_the_shell_does(sshd):
    """As an account without root's rights: a temp dir whose base it may
    not write, a file of its temp dir it may not change, a tree it may
    only partly remove.  Each chore tries, then hands over to the shell,
    which fails (or removes what it can) as vanilla's would."""
    with plasmid.Router() as router:
        ctx = router.ssh(**sshd.ssh_kwargs())
        root = ctx.call(chores_fns.new_temp_dir)
        try:
            task = os.path.join(root, TASK)
            tree = [(TMP, 'dir', 0o700), (TASK, 'dir', 0o700),
                    (TASK + '/locked', 'dir', 0o500),
                    (TASK + '/locked/file', 'file', 0o600),
                    (TASK + '/free', 'file', 0o600)]
            assert compare(ctx, root, tree, 'rm -f -r %s/ > /dev/null 2>&1'
                           % task) == 'shell'
            read_only = [(TMP, 'dir', 0o500)]
            assert compare(ctx, root, read_only, mkdtemp_line(
                os.path.join(root, TMP), os.path.basename(TASK))) == 'shell'
            not_ours = [(TMP, 'dir', 0o700), (TASK, 'dir', 0o700),
                        (TASK + '/source', 'link:/etc/hostname', 0)]
            assert compare(ctx, root, not_ours, 'chmod u+x %s/source'
                           % task) == 'shell'
        finally:
            ctx.call(chores_fns.remove, root)
