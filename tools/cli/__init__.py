"""The command lines that combine the jobs below: preview, capacity, policy, deployer policy, bench."""
