"""gamerig package."""
