"""``hpi``: the one command line of hyperpod-inference (preview, rehearse, capacity, preflight, verify, policy, ...).

Every subcommand runs an existing tool's ``main(argv)`` with that tool's own argparse parser; which tool each
subcommand runs is one table, :data:`hpi.commands.COMMANDS`. ``hpi`` finds the project like ``pulumi`` does (walks up
from the working directory to ``Pulumi.yaml``, or ``--cwd DIR``) and imports the tools *of that project*.
"""
