# run_targets.py is a script (it runs ansible-core's integration targets for
# minutes), not a test module.
collect_ignore = ['run_targets.py']
