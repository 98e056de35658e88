"""What every command prints through: the console, the one error path and exit codes, advisories."""
