"""The plan: the program under mocks, rendering, plan JSON, diff, schema validation, capacity."""
