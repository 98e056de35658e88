"""Read-only AWS checks before pulumi up, and the cleanup GuardDuty needs before destroy."""
