"""The project's tools, one folder per job (top layer first; hpi/commands.py runs them):

- ``cli/``: The command lines that combine the jobs below: preview, capacity, policy, deployer policy, bench.
- ``verify/``: Post-deploy checks of a stack against the live account (hpi verify).
- ``preflight/``: Read-only AWS checks before pulumi up, and the cleanup GuardDuty needs before destroy.
- ``generate/``: Generators and checkers of checked-in files (models, rules, reference docs, the CI matrix).
- ``fetch/``: Fetch pinned upstream inputs into vendor/: the CRDs and the HyperPod dependencies chart.
- ``rehearse/``: The deploy rehearsal: pulumi up and destroy walked on the mock graph, and its graph views.
- ``plan/``: The plan: the program under mocks, rendering, plan JSON, diff, schema validation, capacity.
- ``report/``: What every command prints through: the console, the one error path and exit codes, advisories.
"""
